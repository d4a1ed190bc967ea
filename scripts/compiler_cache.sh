# Sourced by the build scripts: sets compiler_cache_flags, the CMake flags that
# put ccache in front of the compilers when it is installed (empty otherwise).
# The cache lives outside the clone (XFT_CCACHE_DIR, default /var/cache/xftctl-ccache)
# and paths are hashed relative to the clone (base_dir, no hash_dir), so a fresh
# clone in another folder hits the objects an earlier build left there; the
# sloppiness ccache needs to cache the files that use the tests' precompiled header.
compiler_cache_flags=()
if command -v ccache >/dev/null; then
  _cache_env="/usr/bin/env;CCACHE_DIR=${XFT_CCACHE_DIR:-/var/cache/xftctl-ccache};CCACHE_BASEDIR=$PWD"
  _cache_env+=";CCACHE_NOHASHDIR=true;CCACHE_MAXSIZE=8G;CCACHE_SLOPPINESS=pch_defines,time_macros;ccache"
  compiler_cache_flags=(-DCMAKE_C_COMPILER_LAUNCHER="$_cache_env" -DCMAKE_CXX_COMPILER_LAUNCHER="$_cache_env")
fi
