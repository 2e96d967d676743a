#!/usr/bin/env bash
# The documentation's cross-references (CTest "unit.docs_links", label unit).
#
#   tests/docs/check-links.sh SOURCE_DIR
#
# 1. Every relative Markdown link of README.md, docs/*.md and
#    results/notes/*.md, [text](path) or [text](path#anchor), names a file
#    that exists (relative to the linking file), and its anchor, if any, is
#    the GitHub anchor of one of that file's headings.
# 2. Every mention of docs/NAME.md anywhere in the sources, scripts, headers
#    and documents names a file that exists.
# 3. Every section named after a document, as in `docs/rlu.md, "Section
#    entry"` or `[rlu.md](rlu.md), "Section entry"` (also across the lines
#    of a comment), is a heading of that document or a paragraph opened
#    with it in bold (**Section entry.**).
# Links inside fenced code blocks and backquotes are not links.  Each
# failure names the file and line.
set -euo pipefail
src=${1:?usage: check-links.sh SOURCE_DIR}
cd "$src"
bad=0
err() { echo "check-links: $*" >&2; bad=1; }

# The GitHub anchors of a Markdown file's headings, one a line.
anchors() {
  awk '/^```/ { code = !code; next }
       !code && /^#+ / {
         h = $0; sub(/^#+ +/, "", h); h = tolower(h)
         out = ""
         for (i = 1; i <= length(h); i++) {
           c = substr(h, i, 1)
           if (c ~ /[a-z0-9_-]/) out = out c
           else if (c == " ") out = out "-"
           else if (c ~ /[^ -~]/) out = out c   # letters outside ASCII stay
         }
         print out
       }' "$1"
}

# ---- 1. Markdown links ----------------------------------------------------
mapfile -t mdfiles < <(ls README.md docs/*.md results/notes/*.md 2>/dev/null)
n_links=0
while IFS=$'\t' read -r where file target; do
  n_links=$((n_links + 1))
  path=${target%%#*}
  anchor=""
  [[ $target == *"#"* ]] && anchor=${target#*#}
  if [ -z "$path" ]; then
    resolved=$file
  else
    resolved=$(dirname "$file")/$path
  fi
  if [ ! -e "$resolved" ]; then
    err "$where: link to $target: no file $resolved"
    continue
  fi
  if [ -n "$anchor" ]; then
    if [[ $resolved != *.md ]]; then
      err "$where: link to $target: an anchor into a file that is not Markdown"
    elif ! anchors "$resolved" | grep -qxF -- "$anchor"; then
      err "$where: link to $target: $resolved has no heading with the anchor #$anchor"
    fi
  fi
done < <(awk '
  FNR == 1 { code = 0 }
  /^```/ { code = !code; next }
  code { next }
  {
    line = $0
    gsub(/`[^`]*`/, "", line)          # code spans hold no links
    while (match(line, /\]\([^) ]+\)/)) {
      t = substr(line, RSTART + 2, RLENGTH - 3)
      line = substr(line, RSTART + RLENGTH)
      if (t ~ /^[a-z]+:/) continue      # http:, https:, mailto:
      printf "%s:%d\t%s\t%s\n", FILENAME, FNR, FILENAME, t
    }
  }' "${mdfiles[@]}")

# ---- 2 and 3. docs/NAME.md mentions and the sections they name --------------
# Each file's text with comment leaders removed and lines joined, so that a
# reference broken across two comment lines is still one string; each piece
# keeps the line it starts on.
mapfile -t srcfiles < <(git ls-files 2>/dev/null |
  grep -E '\.(c|h|cc|cpp|md|sh|txt|cmake|pml|awk)$|CMakeLists\.txt$|^\.ci/' |
  grep -v -e '^results/reference/' -e '^tests/docs/check-links\.sh$' || true)
[ ${#srcfiles[@]} -gt 0 ] || mapfile -t srcfiles < <(find . -type f \( -name '*.[ch]' -o -name '*.md' \
  -o -name '*.sh' -o -name 'CMakeLists.txt' \) -not -path './build*' -not -path './.git/*' |
  sed 's|^\./||')
n_refs=0
while IFS=$'\t' read -r where doc section; do
  n_refs=$((n_refs + 1))
  if [ ! -f "$doc" ]; then
    err "$where: $doc does not exist"
    continue
  fi
  [ -n "$section" ] || continue
  if ! awk -v s="$section" '
       /^```/ { code = !code; next }
       !code && /^#+ / { h = $0; sub(/^#+ +/, "", h); if (index(h, s) == 1) found = 1 }
       !code && index($0, "**" s) == 1 { found = 1 }
       END { exit !found }' "$doc"; then
    err "$where: $doc has no section \"$section\""
  fi
done < <(awk '
  function flush(   t, doc, sec, rest) {
    t = text
    while (match(t, /(docs\/[A-Za-z0-9_.-]+\.md|\]\([A-Za-z0-9_.-]+\.md\))/)) {
      doc = substr(t, RSTART, RLENGTH)
      rest = substr(t, RSTART + RLENGTH)
      t = rest
      if (doc ~ /^\]\(/) {
        # a relative Markdown link from a page of docs/ (elsewhere part 1 checks it)
        doc = substr(doc, 3, length(doc) - 3)
        if (fname ~ /^docs\//) doc = "docs/" doc
        else continue
      }
      sec = ""
      if (match(rest, /^\)?,? +"[^"]+"/)) {
        sec = substr(rest, RSTART, RLENGTH); sub(/^[^"]*"/, "", sec); sub(/"$/, "", sec)
        gsub(/[ \t]+/, " ", sec)
      }
      printf "%s:%d\t%s\t%s\n", fname, start, doc, sec
    }
    text = ""
  }
  FNR == 1 { if (text != "") flush(); fname = FILENAME }
  {
    line = $0
    # comment leaders: " * ", "# ", "// "; joined pieces of one comment
    sub(/^[ \t]*(\*|#+|\/\/)[ \t]?/, "", line)
    if (text == "") start = FNR
    text = text " " line
    if (line ~ /^[ \t]*$/ || length(text) > 2000) flush()
  }
  END { flush() }' "${srcfiles[@]}")

if [ "$bad" != 0 ]; then
  echo "check-links: broken references (above)" >&2
  exit 1
fi
echo "check-links: $n_links Markdown links in ${#mdfiles[@]} files and $n_refs references to docs/ resolve"
