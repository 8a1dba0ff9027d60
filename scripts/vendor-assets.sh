#!/usr/bin/env bash
# Reproduce codeqa/static/vendor/ from pinned npm packages, checking each tarball's published integrity.
# Only the browser files the UI loads and each package's licence are copied, unmodified.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/codeqa/static/vendor"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# package@version|sha512 integrity (as in the registry's dist.integrity)|files to copy (relative to package/)
PACKAGES=(
  "marked@18.2.1|sha512-ii4bxCTCqqwpT86XZWgJNs+ZnAIZksmLGYMViWA7PDIXYIeNo1x6cDdX3JOip9NM/cI6p8z57FxliACboTruMA==|lib/marked.esm.js LICENSE"
  "dompurify@3.4.18|sha512-ofe3wI/uNm68HInABYFJYqQxRw1EaKAjNdrFVKqjUY+UZurvNd2L/HuQe097s/4RivWiZyP6tT7aoT8atjfhwg==|dist/purify.es.mjs LICENSE"
  "@highlightjs/cdn-assets@11.12.0|sha512-KvOKXODaiFmId9xaq3xc5xCL66wVLUuOngDbO9B/kewbFTqdGbn2nJxNhN3H5R1cgDTVj6R8vH0zgiNDEGjpDw==|es/highlight.min.js styles/github.min.css styles/github-dark.min.css LICENSE"
)

vendor_dir() {
  # @highlightjs/cdn-assets -> highlight.js (the project's name for its browser build)
  case "$1" in
    @highlightjs/cdn-assets) echo "highlight.js" ;;
    *) echo "$1" ;;
  esac
}

for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r spec integrity files <<<"$entry"
  name="${spec%@*}"
  tarball="$(cd "$WORK" && npm pack --silent "$spec")"
  actual="sha512-$(openssl dgst -sha512 -binary "$WORK/$tarball" | base64 -w0)"
  if [[ "$actual" != "$integrity" ]]; then
    echo "integrity mismatch for $spec: $actual" >&2
    exit 1
  fi
  unpacked="$WORK/${tarball%.tgz}"
  mkdir -p "$unpacked"
  tar xzf "$WORK/$tarball" -C "$unpacked"
  out="$DEST/$(vendor_dir "$name")"
  rm -rf "$out"
  mkdir -p "$out"
  for f in $files; do
    # .mjs -> .js so every static server sends a JavaScript MIME type for module scripts
    target="$(basename "$f")"
    [[ "$target" == *.mjs ]] && target="${target%.mjs}.js"
    cp "$unpacked/package/$f" "$out/$target"
  done
  echo "$spec" >"$out/VERSION"
  echo "vendored $spec -> ${out#"$ROOT"/}"
done
