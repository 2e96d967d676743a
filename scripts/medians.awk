# Reduces readmostly-bench CSV rows to medians.
# Input: CSV files (lines starting with '#' and the header are skipped).
# Output: experiment,impl,threads,param,metric,median,reps,unit
BEGIN { FS = ","; OFS = "," }
/^#/ { next }
$1 == "experiment" { next }
NF == 8 {
  key = $1 FS $2 FS $3 FS $4 FS $6
  n[key]++
  v[key, n[key]] = $7 + 0
  unit[key] = $8
  if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
}
END {
  for (i = 1; i <= nk; i++) {
    k = order[i]
    m = n[k]
    # insertion sort of the m values (m is small)
    for (a = 1; a <= m; a++) s[a] = v[k, a]
    for (a = 2; a <= m; a++) {
      x = s[a]
      for (b = a - 1; b >= 1 && s[b] > x; b--) s[b + 1] = s[b]
      s[b + 1] = x
    }
    med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
    print k, sprintf("%.6g", med), m, unit[k]
  }
}
