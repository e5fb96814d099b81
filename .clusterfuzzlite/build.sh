#!/bin/bash -eu
# ClusterFuzzLite's build step: the project's one fuzz build script.
exec "$SRC/frameproof/fuzz/oss-fuzz/build.sh"
