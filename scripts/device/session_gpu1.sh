set -u
mkdir -p $OUT/p
OUT=$OUT/p LIMIT=300 bash scripts/device/plugin_suite.sh > $OUT/plugin-console.txt 2>&1
tar -C $OUT/p -czf $OUT/plugin.tar.gz . && rm -rf $OUT/p
LIMIT=270 bash scripts/device/issue27_suite.sh
