#!/bin/sh
# install.sh puts a cadence binary in CADENCE_INSTALL_DIR and on the job's
# PATH (GITHUB_PATH): the release archive for this runner's OS and
# architecture when one exists, its checksum verified, else `go install`.
#
# Environment:
#   CADENCE_VERSION      a release tag such as v1.2.3, or latest (default)
#   CADENCE_INSTALL_DIR  where the binary goes (default $RUNNER_TEMP/cadence-bin)
#   CADENCE_RELEASE_URL  the releases page (default the project's on GitHub)
#   CADENCE_MODULE       the module go install builds from
set -eu

version=${CADENCE_VERSION:-latest}
dest=${CADENCE_INSTALL_DIR:-${RUNNER_TEMP:-/tmp}/cadence-bin}
base=${CADENCE_RELEASE_URL:-https://github.com/cadence-dev/cadence/releases}
module=${CADENCE_MODULE:-github.com/cadence-dev/cadence/cmd/cadence}

case $version in
*[!A-Za-z0-9.+-]*) ;; # refused below
latest | v[0-9]*) version_ok=1 ;;
esac
case ${version_ok:-} in
1) ;;
*)
	echo "cadence action: version must be latest or a tag such as v1.2.3, not '$version'" >&2
	exit 2
	;;
esac

mkdir -p "$dest"

# platform prints the release archive's os_arch for this machine, nothing
# when no release is built for it.
platform() {
	case $(uname -s) in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) return 0 ;;
	esac
	case $(uname -m) in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) return 0 ;;
	esac
	echo "${os}_${arch}"
}

# sha256 prints the SHA-256 of a file.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

# from_release downloads and verifies the release archive; it returns 1
# when the release has no archive for this platform (go install then),
# and exits when the archive does not match its checksum.
from_release() {
	p=$(platform)
	[ -n "$p" ] || return 1
	if [ "$version" = latest ]; then
		url=$base/latest/download
	else
		url=$base/download/$version
	fi
	tmp=$(mktemp -d)
	asset=cadence_$p.tar.gz
	if ! curl -fsSL --retry 3 -o "$tmp/$asset" "$url/$asset" ||
		! curl -fsSL --retry 3 -o "$tmp/checksums.txt" "$url/checksums.txt"; then
		rm -rf "$tmp"
		echo "cadence action: no release archive $asset at $url; building with go install" >&2
		return 1
	fi
	want=$(awk -v a="$asset" '$2 == a || $2 == "*" a { print $1 }' "$tmp/checksums.txt")
	got=$(sha256 "$tmp/$asset")
	if [ -z "$want" ] || [ "$want" != "$got" ]; then
		rm -rf "$tmp"
		echo "cadence action: $asset from $url does not match checksums.txt (want '${want:-none}', got $got): not installed" >&2
		exit 1
	fi
	tar -xzf "$tmp/$asset" -C "$tmp" cadence
	chmod 755 "$tmp/cadence"
	mv "$tmp/cadence" "$dest/cadence"
	rm -rf "$tmp"
}

if ! from_release; then
	if ! command -v go >/dev/null 2>&1; then
		echo "cadence action: no release archive for $(uname -s)/$(uname -m) and no go toolchain to build one (add actions/setup-go before this action)" >&2
		exit 1
	fi
	# The first build compiles the pure-Go SQLite: a few minutes.
	GOBIN=$dest go install "$module@$version"
fi

if [ -n "${GITHUB_PATH:-}" ]; then
	echo "$dest" >>"$GITHUB_PATH"
fi
"$dest/cadence" version
