#!/usr/bin/env bash
# Installs what the build and the tests need, on Debian 12+ or Ubuntu 24.04+ (apt-get, no recommended extras; sudo
# only when not root). This is the one list of the project's dependencies: the README's quick start and .ci/run both
# run it. CUDA is the exception: no Debian or Ubuntu package has CUDA 12+ at /usr/local/cuda, so this only checks for
# it and says where to get it.
# usage: scripts/install-deps.sh [--no-tests]
#   --no-tests: only what the build needs (no GoogleTest, no test tools); build with -DASYNCCHECK_BUILD_TESTS=OFF.
set -euo pipefail

# The build. binutils is also needed at run time: reports name call sites through addr2line.
build=(cmake make g++ pkg-config libunwind-dev binutils)
# The tests: GoogleTest; python3-jsonschema checks SARIF and trace files against their schemas; clang-format (14 on
# Debian 12) is the format check; git lists the files the format check reads. pytest, pytest-xdist, setuptools and
# pip: the Python package's tests (tests/python: the pytest plugin, xdist, pip install offline). Below: chromium.
tests=(libgtest-dev python3 python3-jsonschema clang-format git python3-pytest python3-pytest-xdist python3-setuptools
  python3-pip)

packages=("${build[@]}")
case "${1:-}" in
  --no-tests) ;;
  "") packages+=("${tests[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [--no-tests]" >&2; exit 2 ;;
esac

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get here; install these with your package manager: ${packages[*]}" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The tests also load the HTML report in headless Chromium (html.browser). Debian packages it; Ubuntu has only a
# transitional package for a snap, which a container cannot run: there it is left out and that test skips itself.
if [ "${1:-}" != --no-tests ] && apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]' &&
  ! apt-cache show chromium 2>/dev/null | grep -q '^Pre-Depends:.*snapd'; then
  packages+=(chromium)
fi
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"

# CMakeLists.txt's cmake_minimum_required: Ubuntu 22.04's cmake (3.22) is too old.
need=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\)).*/\1/p' "$(dirname "$0")/../CMakeLists.txt")
have=$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
  echo "install-deps: cmake $have is older than the $need the build needs (pip install cmake, or Kitware's apt repository)" >&2
  exit 1
fi

# find_package(CUDAToolkit) looks for nvcc on PATH, then in /usr/local/cuda; the capture needs CUPTI's header there.
cuda=/usr/local/cuda
if command -v nvcc >/dev/null 2>&1; then
  cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
if [ -z "$(find -L "$cuda/" -name cupti.h -print -quit 2>/dev/null)" ]; then
  echo "install-deps: the packages are installed, but no CUDA with CUPTI was found (cupti.h under $cuda). Install" >&2
  echo "  NVIDIA's CUDA toolkit 12 or newer, which includes CUPTI: https://developer.nvidia.com/cuda-downloads" >&2
  exit 1
fi
echo "install-deps: done (CUDA: $cuda)"
