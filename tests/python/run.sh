#!/usr/bin/env bash
# python3 -m pytest python/tests, with what the tests need from the build (tests/python/CMakeLists.txt). PYTHON
# first, else Debian's /usr/bin/python3 (pyenv's may lack pytest); SKIPPED where neither has
# pytest. Entry points are not loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD): an installed copy of the package would
# register the plugin a second time next to the tree's own.
# usage: run.sh PYTHON SOURCE_DIR COMMAND LIBRARY STUB VERSION
set -u
python=$1 source=$2
export ASYNCCHECK_COMMAND=$3 ASYNCCHECK_LIBRARY=$4 ASYNCCHECK_TEST_STUB=$5 ASYNCCHECK_TEST_VERSION=$6
export ASYNCCHECK_TEST_SOURCE=$source
for p in "$python" /usr/bin/python3; do
  if "$p" -c "import pytest" >/dev/null 2>&1; then
    export PYTHONPATH="$source/python${PYTHONPATH:+:$PYTHONPATH}" PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
    cd "$source/python" || exit 1
    exec "$p" -m pytest -p pytester -p no:cacheprovider -q tests
  fi
done
echo "SKIPPED: pytest is not installed for $python nor /usr/bin/python3 (apt-get install python3-pytest python3-pytest-xdist)"
exit 77
