/** A daily line chart drawn by uPlot (no hand-written chart code); resizes with its container. */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series { label: string; values: number[]; color: string }

export function DailyChart({ days, series, title }: { days: string[]; series: Series[]; title: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const plot = new uPlot({
      width: el.clientWidth || 600, height: 240, title: undefined,
      scales: { x: { time: true } },
      axes: [{ stroke: '#374151' }, { stroke: '#374151' }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
    }, [xs, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height: 240 }));
    resize.observe(el);
    return () => { resize.disconnect(); plot.destroy(); };
  }, [days.join(), series.map((s) => s.values.join()).join('|')]);
  return <figure class="chart"><div ref={box} role="img" aria-label={title} /><figcaption class="offscreen">{title}</figcaption></figure>;
}
