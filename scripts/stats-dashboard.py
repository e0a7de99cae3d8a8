# Writes dashboards/buzzload-run-stats.json from dashboards/buzzload-run.json: the same panels
# over k6's per-stat trend series instead of native histograms (issue 29 item 4).
#   python3 scripts/stats-dashboard.py
import copy, json, os, re

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
d=json.load(open(os.path.join(root, 'dashboards', 'buzzload-run.json')))
s=copy.deepcopy(d)
s['title']='Buzz load run (buzzload, per-stat trends)'
s['uid']='buzzload-run-stats'
s['description']=("A buzzload run written by --out experimental-prometheus-rw with k6's per-stat trends (the default: "
 "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM unset) and --tag testid=...; for every panel set "
 "K6_PROMETHEUS_RW_TREND_STATS=p(50),p(95),p(99),count (k6's default is p(99) alone: the p50, p95 and throughput panels then stay empty and say so). "
 "A percentile per stat series is each runner's since its start; across runners the panels show the largest (an upper bound): "
 "native histograms (dashboards/buzzload-run.json) merge runners exactly.")
def tr(expr):
    m=re.fullmatch(r'histogram_quantile\((0\.\d+), sum(?: by \(([^)]*)\) )?\(rate\((k6_[a-z_]+)_seconds(\{[^}]*\})\[\$__rate_interval\]\)\)\)',expr)
    if m:
        q,by,name,sel=m.groups()
        stat='p'+str(int(round(float(q)*100)))
        return (f'max by ({by}) ({name}_{stat}{sel})' if by else f'max({name}_{stat}{sel})'), stat
    m=re.fullmatch(r'(sum(?: by \([^)]*\) )?\()histogram_count\(rate\((k6_[a-z_]+)_seconds(\{[^}]*\})\[\$__rate_interval\]\)\)(\))',expr)
    if m:
        pre,name,sel,post=m.groups()
        # k6 divides a Time trend's count stat by 1000 (every stat converted to seconds)
        return pre+f'rate({name}_count{sel}[$__rate_interval]) * 1000'+post, 'count'
    m=re.fullmatch(r'count by \(step\) \(histogram_count\(rate\((k6_[a-z_]+)_seconds(\{[^}]*\})\[\$__rate_interval\]\)\) > 0\)',expr)
    if m:
        name,sel=m.groups()
        return f'count by (step) ({name}_p99{sel})', 'p99'
    if '_seconds' in expr:
        raise SystemExit('untranslated: '+expr)
    return expr, None
names={'p50':'p(50)','p95':'p(95)','count':'count'}
for p in s['panels']:
    stats=set()
    for t in p.get('targets',[]):
        t['expr'],st=tr(t['expr'])
        if st: stats.add(st)
    if p.get('title','').startswith('Latency per operation'):
        p['title']='Latency per operation (per-stat series: each runner since its start, the largest across runners)'
    desc=(p.get('description') or '').replace('Computed by Prometheus from the k6_buzz_op_duration_seconds native histograms of','From the per-stat series of')
    extra=[x for x in sorted(stats) if x!='p99']
    if extra:
        desc=('Needs trend stat '+', '.join(names[x] for x in extra)+' in K6_PROMETHEUS_RW_TREND_STATS. '+desc).strip()
    if desc: p['description']=desc
for a in s['annotations']['list']:
    if 'expr' in a:
        a['expr'],_=tr(a['expr'])
for v in s['templating']['list']:
    if v.get('name')=='op':
        v['definition']=v['definition'].replace('k6_buzz_op_duration_seconds','k6_buzz_op_duration_p99')
        v['query']['query']=v['query']['query'].replace('k6_buzz_op_duration_seconds','k6_buzz_op_duration_p99')
with open(os.path.join(root, 'dashboards', 'buzzload-run-stats.json'), 'w') as f:
    json.dump(s,f,indent=2); f.write('\n')
