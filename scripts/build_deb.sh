#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb: the Debian packages (wharfd, libwharf0, libwharf-dev, wharf-cli) into OUT (default
# dist/), built offline by dpkg-buildpackage + debhelper from a copy of the tree's tracked and
# untracked-but-not-ignored files (no build directory, nothing downloaded).
#   scripts/build_deb.sh [OUT]      JOBS=N: parallel compile jobs (default: the cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
ver=$(sed -n 's/^project(wharf VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$deb_ver" != "$ver" ]; then
  echo "build_deb: debian/changelog says $deb_ver, CMakeLists.txt's project() says $ver:" \
       "add a changelog entry (dch -v $ver)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/wharf-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src="$work/wharf-$ver"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | \
  (while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) | \
  tar --null -T - -cf - | tar -xf - -C "$src"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-$(nproc)} nocheck" \
   dpkg-buildpackage -b -uc -us >"$work/build.log" 2>&1) || {
  tail -50 "$work/build.log" >&2
  echo "build_deb: dpkg-buildpackage failed (the last 50 lines above)" >&2
  exit 1
}
mkdir -p "$out"
mv "$work"/*.deb "$out"/
ls -1 "$out"/*_"$ver"_*.deb
