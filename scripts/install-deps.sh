#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when missing.
# Idempotent and quick when everything is already there.
set -euo pipefail

packages=(
	build-essential clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev
	systemtap-sdt-dev libcriterion-dev libunwind-dev libdw-dev pkg-config
	valgrind binutils sqlite3 libsqlite3-dev heaptrack zstd ocaml-nox ocaml-findlib
	libprotobuf-c-dev protobuf-c-compiler golang-go libc6-dbg libxml2-utils
	xz-utils debuginfod libdebuginfod1 chromium
	libclang-rt-14-dev libcap2-bin util-linux postgresql-15 ocaml-dune python3 python3.11-dev
	opam rsync
)
if [ "$#" -gt 0 ]; then
	packages+=("$@")
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	"install ok installed") ;;
	*) missing+=("$p") ;;
	esac
done

[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing Debian packages: ${missing[*]} (run make as root, or install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
