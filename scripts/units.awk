# Numbers for people: three significant digits and a unit.
#
# As a library, beside another program (awk -f scripts/units.awk -f prog.awk):
#   human(v, kind)  kind is one of
#     rate    per second         233000000 -> "233 M/s"
#     ns      nanoseconds        1.13345 -> "1.13 ns", 4520 -> "4.52 µs"
#     us      microseconds       (shown as ns would be)
#     ratio   a ratio            1.13345 -> "1.13×"
#     count   a plain quantity   26 -> "26.0", 4831 -> "4.83 k"
#     num     three digits only  0.874393 -> "0.874"
#   An empty or non-numeric v gives "" (a cell with nothing measured).
#   sig3(x) is the bare number with three significant digits, trailing
#   zeros kept (1 -> "1.00"), never in e-notation.
#   target(v, kind) is human() without trailing zeros (3 -> "3×", 5000 ns
#   -> "5 µs"): a target as it was written.
# Alone: awk -v H_VALUE=2.32675e+08 -v H_KIND=rate -f scripts/units.awk
# prints one formatted value.  As a filter, awk -v H_FILL=1 -f
# scripts/units.awk replaces each placeholder \001KIND\002VALUE\003 in its
# input with human(VALUE, KIND) (KIND-t: target(VALUE, KIND)), so that a
# long document costs one awk, not one per number.  Written for any POSIX
# awk (Debian's mawk).
BEGIN {
  if (H_KIND != "") { print human(H_VALUE, H_KIND); exit }
}
H_FILL == 1 {
  line = $0
  out = ""
  while (match(line, /\001[a-z]+(-t)?\002[^\003]*\003/)) {
    at = RSTART; len = RLENGTH   # target() below runs match() too
    ph = substr(line, at + 1, len - 2)
    k = ph; sub(/\002.*/, "", k)
    v = ph; sub(/^[^\002]*\002/, "", v)
    if (k ~ /-t$/) { sub(/-t$/, "", k); f = target(v, k) } else f = human(v, k)
    out = out substr(line, 1, at - 1) f
    line = substr(line, at + len)
  }
  print out line
}

function target(v, kind,   s, t) {
  s = human(v, kind)
  if (s ~ /\.0*([^0-9]|$)/) sub(/\.0*/, "", s)
  else if (match(s, /\.[0-9]*[1-9]0+/)) {
    # drop the zeros after the last significant decimal
    t = substr(s, RSTART, RLENGTH); sub(/0+$/, "", t)
    s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
  }
  return s
}

function sig3(x,   a, e, d, s) {
  if (x == 0) return "0"
  a = x < 0 ? -x : x
  e = int(log(a) / log(10))
  if (exp(e * log(10)) > a * (1 + 1e-12)) e--
  if (exp((e + 1) * log(10)) <= a * (1 - 1e-12)) e++
  d = 2 - e
  if (d < 0) d = 0
  s = sprintf("%." d "f", x)
  # 9.996 rounds to 10.00: one digit too many, so one decimal fewer.
  a = s + 0; if (a < 0) a = -a
  if (d > 0 && a >= exp((e + 1) * log(10)) * (1 - 1e-12)) s = sprintf("%." (d - 1) "f", x)
  return s
}

# scaled(x, unit, step, prefixes...): x in the smallest unit, divided by step
# while it reaches step (and a larger prefix is left).  The prefixes are a
# space-separated list, smallest first; each result ends with "unit".
function scaled(x, prefixes, step, unit,   p, n, i, a, s) {
  n = split(prefixes, p, " ")
  for (i = 1; i <= n; i++) {
    s = sig3(x)
    a = s + 0; if (a < 0) a = -a
    if (a < step || i == n) break
    x = x / step
  }
  if (p[i] == "-") p[i] = ""
  return s " " p[i] unit
}

function isnum(v) {
  return v ~ /^[ \t]*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?[ \t]*$/
}

function human(v, kind,   x, s) {
  if (!isnum(v)) return ""
  x = v + 0
  if (kind == "rate") return scaled(x, "- k M G T", 1000, "/s")
  if (kind == "ns") return time_ns(x)
  if (kind == "us") return time_ns(x * 1000)
  if (kind == "ratio") return sig3(x) "×"
  if (kind == "count") { s = scaled(x, "- k M G T", 1000, ""); sub(/ $/, "", s); return s }
  return sig3(x)
}

function time_ns(x,   s) {
  s = scaled(x, "n µ m -", 1000, "s")
  return s
}
