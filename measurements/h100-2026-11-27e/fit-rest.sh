#!/usr/bin/env bash
# 2026-11-27e, the refit-fp32 branch's call, 12:59 (the HEAD edf6f9a binaries of run1.sh, .dev/pack.tar.xz
# sha256 a55a3017dd96...): the configs the fp32 rule weighs at the 20 shapes of fit.json that
# fit.json lacks (the splits of the 32x64, 64x32 and 16x128 tiles, which the space does not
# offer split; the 128x128 tile with k steps of 8, whole and split), and at each shape the
# rule's pick and fit.json's fastest config again, to compare the two calls. Run from the
# repository root on the GPU machine.
sha256sum .dev/pack.tar.xz; tar xJf .dev/pack.tar.xz -C .dev; export WEFT_RECORDS=/tmp/none.json; nvidia-smi -L
python3 - >/tmp/l.txt <<'P'
import json
d=json.load(open('measurements/h100-2026-11-27e/fit.json'))
B='wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0'
for r in d['rows']:
 s=dict(x.split('=') for x in r['shape'].split(','));m,n,k=(int(s[c]) for c in 'mnk')
 t={x['config'] for x in r['trials']};o=[]
 for c in sorted({c for c in t if 'sk=' not in c}|{B}):
  p={a:int(b) for a,b in (x.split('=') for x in c.split(','))}
  bm=p['wm']*p['rm']*p['lm']*p['tm'];bn=p['wn']*p['rn']*p['ln']*p['tn'];T=-(-m//bm)*-(-n//bn)
  o+=[c+(f',sk={f}' if f>1 else '') for f in [1,2,4,8,16,32,64] if f==1 or bm*bn>=2048 and T<128 and T*f<=512 and k>=f*128]
 o=[c for c in o if c not in t]+[min(r['trials'],key=lambda x:x['ms'])['config']]
 print(r['shape'],len(o),';'.join(o))
P
i=10; s0=$(date +%s); while read s c l; do i=$((i+1)); timeout 50 .dev/bin/weft sweep --op matmul --shapes "$s" --target cuda --sample 0 --fixed "$l" --trials --budget-ms 10 --json /tmp/r$i.json </dev/null >>$OUT/fit-rest.txt 2>&1; echo "$s $c rc=$? $(( $(date +%s)-s0 ))s"; python3 -c "import json,glob;R=[json.load(open(f)) for f in sorted(glob.glob('/tmp/r*.json'))];J=R[0];J['rows']=[r for x in R for r in x['rows']];J['shapes']=';'.join(r['shape'] for r in J['rows']);json.dump(J,open('$OUT/fit-rest.json','w'),indent=1)"; done </tmp/l.txt
