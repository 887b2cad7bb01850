#!/bin/sh
# Install into a temporary prefix, MOVE it, build examples/consumer against the moved tree
# with find_package and with pkg-config, run it with `cudamux run` on the mock; build and
# run the GoogleTest example (examples/unit-test) the same way; check the launcher's exit
# statuses, environment and preloads.
#   install_test.sh <build dir> <source dir> <work dir>
set -eu
build=$1 src=$2 work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/stage" >"$work/install.log" || fail "cmake --install (see $work/install.log)"
mv "$work/stage" "$work/moved"
prefix=$work/moved
export XDG_CACHE_HOME="$work/cache" CUDAMUX_BACKEND=mock
for f in bin/cudamux bin/cudamux-info lib/libcuda.so.1 lib/libcuda.so lib/libcudamux-core.so.0 \
         lib/cudamux/plugins/libcudamux-mock.so include/cuda.h include/cudamux.h \
         share/cudamux/config.toml lib/cmake/cudamux/cudamuxConfig.cmake lib/pkgconfig/cudamux-cuda.pc; do
  [ -e "$prefix/$f" ] || fail "the install tree has no $f"
done
! grep -rq "$work/stage" "$prefix/lib/cmake" "$prefix/lib/pkgconfig" || fail "the package files name the old prefix"

# 1. find_package(cudamux)
cmake -S "$src/examples/consumer" -B "$work/consumer-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/consumer-cmake.log" 2>&1 || { cat "$work/consumer-cmake.log"; fail "configure with find_package"; }
cmake --build "$work/consumer-cmake" >>"$work/consumer-cmake.log" 2>&1 || { cat "$work/consumer-cmake.log"; fail "build with find_package"; }
out=$("$prefix/bin/cudamux" run --backend mock -- "$work/consumer-cmake/consumer") || fail "find_package consumer: $out"
echo "$out"
case $out in "consumer: ok: 1 device(s), device 0 is cudamux mock"*) ;; *) fail "find_package consumer printed '$out'" ;; esac

# 2. pkg-config (no rpath: only `cudamux run` puts the moved lib/ first)
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs cudamux-cuda cudamux-nvrtc) || fail "pkg-config"
real_prefix=$(cd "$prefix" && pwd -P)
for f in $flags; do
  case $f in
    -I*) [ "$(cd "${f#-I}" && pwd -P)" = "$real_prefix/include" ] || fail "pkg-config: $f is not the moved include/" ;;
    -L*) [ "$(cd "${f#-L}" && pwd -P)" = "$real_prefix/lib" ] || fail "pkg-config: $f is not the moved lib/" ;;
  esac
done
# shellcheck disable=SC2086
cc -std=c11 -o "$work/consumer-pc" "$src/examples/consumer/consumer.c" $flags || fail "build with pkg-config"
out=$("$prefix/bin/cudamux" run -- "$work/consumer-pc") || fail "pkg-config consumer: $out"
echo "$out"
case $out in "consumer: ok:"*) ;; *) fail "pkg-config consumer printed '$out'" ;; esac
printf '[mock]\ndevices = 3\n' >"$work/three.toml"
out=$("$prefix/bin/cudamux" run --config "$work/three.toml" -- "$work/consumer-pc") || fail "--config: $out"
case $out in "consumer: ok: 3 device(s)"*) ;; *) fail "--config three.toml printed '$out'" ;; esac

# 3. the launcher: exit statuses, signals, environment, preloads
set +e
"$prefix/bin/cudamux" run -- sh -c 'exit 7'; [ $? -eq 7 ] || fail "exit status 7 not returned"
sh -c "\"$prefix/bin/cudamux\" run -- sh -c 'kill -TERM \$\$'"; [ $? -eq 143 ] || fail "SIGTERM not returned as 143"
"$prefix/bin/cudamux" run --backend nosuch -- "$work/consumer-pc" 2>"$work/nosuch.err"; rc=$?
set -e
[ $rc -ne 0 ] || fail "--backend nosuch succeeded"
grep -q "nosuch" "$work/nosuch.err" || fail "--backend nosuch: the log does not name the backend"
env_seen=$("$prefix/bin/cudamux" run --backend mock -- sh -c 'echo "$CUDAMUX_BACKEND|$LD_LIBRARY_PATH"')
case $env_seen in "mock|$(cd "$prefix/lib" && pwd -P)"*) ;; *) fail "environment passed: '$env_seen'" ;; esac
# Preloaded into any program, so an NVIDIA NVRTC/libcuda earlier on the path cannot win.
maps=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64 "$prefix/bin/cudamux" run -- cat /proc/self/maps)
echo "$maps" | grep -q "moved/lib/libcuda.so.1" || fail "libcuda.so.1 not preloaded"
echo "$maps" | grep -q "moved/lib/libnvrtc.so.13" || fail "libnvrtc.so.13 not preloaded"
echo "$maps" | grep -q "/usr/local/cuda" && fail "NVIDIA's library was loaded"
"$prefix/bin/cudamux" run -- /nonexistent/program 2>/dev/null && fail "a missing program succeeded"

# 4. cudamux-info of the moved tree finds its own plugins
"$prefix/bin/cudamux" info --json >"$work/info.json"
python3 - "$work/info.json" "$prefix" <<'PY'
import json, os, sys
info = json.load(open(sys.argv[1]))
prefix = os.path.realpath(sys.argv[2])
assert info["plugin_search_path"][-1]["path"].startswith(prefix), info["plugin_search_path"]
assert info["backend"]["file"].startswith(prefix), info["backend"]
assert any(p["name"] == "mock" and p["status"] == "ok" for p in info["plugins"]), info["plugins"]
PY

# 5. the GoogleTest example, against the moved tree, under `cudamux run`
cmake -S "$src/examples/unit-test" -B "$work/unit-test" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/unit-test.log" 2>&1 || { cat "$work/unit-test.log"; fail "configure examples/unit-test"; }
cmake --build "$work/unit-test" >>"$work/unit-test.log" 2>&1 || { cat "$work/unit-test.log"; fail "build examples/unit-test"; }
"$prefix/bin/cudamux" run -- ctest --test-dir "$work/unit-test" --output-on-failure || fail "examples/unit-test failed"
ran=$(ctest --test-dir "$work/unit-test" -N | sed -n 's/^Total Tests: //p')
[ "$ran" -ge 5 ] || fail "examples/unit-test has $ran tests, expected 5"
echo "PASS"
