#!/usr/bin/env bash
# 2026-11-27d, call 5: three and four shared stages filled by cp.async (`st`), against the
# same tiles with two stages through registers, at the shapes where the fp32 template
# misses cuBLAS (whose kernels there are xmma `..._8x..._stage3` and CUTLASS `simt_sgemm_*_8x4`).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
S="m=1021,n=1021,k=1021;m=999,n=1001,k=997;m=2039,n=2039,k=2039;m=333,n=555,k=777;m=4095,n=4097,k=63;m=128,n=2304,k=768;m=4096,n=4096,k=4096;m=1024,n=1024,k=1024;m=2048,n=2048,k=2048"
T1="wm=2,wn=2,rm=2,rn=2,lm=8,ln=4,tm=4,tn=4,bk=8,g=8,mb=0"
T2="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=8,g=8,mb=0"
T3="wm=4,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=8,g=8,mb=0"
T4="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
T5="wm=1,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=0"
T6="wm=2,wn=4,rm=1,rn=1,lm=4,ln=8,tm=8,tn=4,bk=16,g=8,mb=0"
F="a128x64:$T1;a128x64s3:$T1,st=3;a128x64s4:$T1,st=4;b64x128:$T2;b64x128s3:$T2,st=3;b64x128s4:$T2,st=4"
F="$F;c128x128:$T3;c128x128s3:$T3,st=3;d128x128t:$T4;d128x128ts3:$T4,st=3;e32x128:$T5;e32x128s3:$T5,st=3;f64x128:$T6;f64x128s3:$T6,st=3"
timeout 300 .dev/bin/weft sweep --op matmul --target cuda --shapes "$S" --sample 0 --budget-ms 10 --fixed "$F" \
  --json $OUT/stages.json > $OUT/stages.txt 2>&1; echo "stages rc=$? at $(( $(date +%s) - start )) s"
grep -E "^m=" $OUT/stages.txt
