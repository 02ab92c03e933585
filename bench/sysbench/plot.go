package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// nines maps a quantile to the "number of nines" axis of HdrHistogram's
// percentile plots: 0 → 0, 0.9 → 1, 0.99 → 2, 0.999 → 3.
func nines(q float64) float64 {
	if q >= 1 {
		return math.Inf(1)
	}
	return -math.Log10(1 - q)
}

// percentileCurve turns sysbench histogram buckets into the step curve
// latency(percentile): each bucket's value spans the quantiles from the
// cumulative count before it to the one after it. The last step ends at
// 1 - 1/N (the highest quantile N events can show) instead of at infinity.
func percentileCurve(h []Bucket) plotter.XYs {
	total := HistogramCount(h)
	if total == 0 {
		return nil
	}
	limit := nines(1 - 1/float64(total))
	if total == 1 {
		limit = 1
	}
	var xy plotter.XYs
	var cum int64
	for _, b := range h {
		if b.Count == 0 {
			continue
		}
		lo := nines(float64(cum) / float64(total))
		cum += b.Count
		hi := math.Min(nines(float64(cum)/float64(total)), limit)
		lo = math.Min(lo, limit)
		xy = append(xy, plotter.XY{X: lo, Y: b.Ms}, plotter.XY{X: hi, Y: b.Ms})
	}
	return xy
}

// ninesTicks labels the nines axis 0%, 90%, 99%, 99.9%, ...
type ninesTicks struct{}

func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for n := math.Ceil(lo); n <= hi+1e-9; n++ {
		ts = append(ts, plot.Tick{Value: n, Label: ninesLabel(int(n))})
	}
	return ts
}

func ninesLabel(n int) string {
	if n <= 0 {
		return "0%"
	}
	q := 100 * (1 - math.Pow(10, -float64(n)))
	return strconv.FormatFloat(q, 'f', max(0, n-2), 64) + "%"
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten
// (labelled) and the other integer multiples (unlabelled).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		d := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * d
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// decades widens [lo, hi] to whole powers of ten, with room above hi for
// the legend.
func decades(lo, hi, headroom float64) (float64, float64) {
	return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi*headroom)))
}

// seriesLabel names a result in a legend: the target, and the run when a
// session has several.
func seriesLabel(r *Result, runs int) string {
	if runs > 1 {
		return fmt.Sprintf("%s run %d", r.Target, r.Run)
	}
	return r.Target
}

func style(l *plotter.Line, targetIdx, run int) {
	l.Color = plotutil.Color(targetIdx)
	l.Width = vg.Points(1.5)
	l.Dashes = plotutil.Dashes(run - 1)
}

// plotWorkload draws the two figures of one workload and thread count from
// every target's and run's result: the latency percentile curve and the
// per-second throughput and p99. Errors are logged, not fatal.
func (s *session) plotWorkload(cfg config, wl string, threads int) {
	var rs []*Result
	for i := range s.Results {
		r := &s.Results[i]
		if r.Workload == wl && r.Threads == threads && r.Queries > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	dir := filepath.Join(cfg.ResultsDir, "plots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("plots: %v", err)
		return
	}
	stem := filepath.Join(dir, fmt.Sprintf("%s-%s-t%d", s.Stamp, safe(wl), threads))
	title := fmt.Sprintf("%s, %d thread%s", wl, threads, map[bool]string{true: "s"}[threads > 1])
	for _, f := range []struct {
		path string
		draw func([]*Result, []string, int, string, string) error
	}{
		{stem + "-latency.png", drawPercentiles},
		{stem + "-timeseries.png", drawTimeSeries},
	} {
		if err := f.draw(rs, cfg.Targets, cfg.Runs, title, f.path); err != nil {
			logf("plot %s: %v", f.path, err)
		}
	}
}

func targetIndex(targets []string, name string) int {
	for i, t := range targets {
		if t == name {
			return i
		}
	}
	return len(targets)
}

// drawPercentiles writes latency (log scale) against percentile (nines)
// for each result, like HdrHistogram's plots.
func drawPercentiles(rs []*Result, targets []string, runs int, title, path string) error {
	p := plot.New()
	p.Title.Text = "Latency by percentile — " + title
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.X.Tick.Marker = ninesTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	maxX := 2.0
	lo, hi := math.Inf(1), 0.0
	for _, r := range rs {
		xy := percentileCurve(r.Histogram)
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		style(l, targetIndex(targets, r.Target), r.Run)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (p99 %s ms, max %s ms)", seriesLabel(r, runs), ms(r.P99Ms), ms(r.MaxMs)), l)
		maxX = math.Max(maxX, xy[len(xy)-1].X)
		for _, pt := range xy {
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
		}
	}
	if hi == 0 {
		return fmt.Errorf("no histogram")
	}
	p.X.Min, p.X.Max = 0, math.Ceil(maxX-1e-9)
	// Whole decades, so the log axis always has labelled ticks.
	p.Y.Min, p.Y.Max = decades(lo, hi, 3)
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

// drawTimeSeries writes two stacked plots sharing the time axis: QPS per
// interval and p99 per interval (log scale), from sysbench's
// --report-interval lines, so stalls show as dips and spikes.
func drawTimeSeries(rs []*Result, targets []string, runs int, title, path string) error {
	qps, lat := plot.New(), plot.New()
	qps.Title.Text = "Per-second throughput and p99 — " + title
	qps.Y.Label.Text = "queries/s"
	lat.Y.Label.Text = "p99 latency (ms, log scale)"
	lat.X.Label.Text = "seconds into the measured run"
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = logTicks{}
	qps.Add(plotter.NewGrid())
	lat.Add(plotter.NewGrid())
	qps.Legend.Top = true
	qps.Y.Min = 0
	lo, hi, n := math.Inf(1), 0.0, 0
	for _, r := range rs {
		if len(r.Intervals) == 0 {
			continue
		}
		var q, l plotter.XYs
		for _, iv := range r.Intervals {
			q = append(q, plotter.XY{X: iv.AtSec, Y: iv.QPS})
			if iv.LatPctMs > 0 { // a second without events has no p99
				l = append(l, plotter.XY{X: iv.AtSec, Y: iv.LatPctMs})
				lo, hi = math.Min(lo, iv.LatPctMs), math.Max(hi, iv.LatPctMs)
			}
		}
		ql, err := plotter.NewLine(q)
		if err != nil {
			return err
		}
		style(ql, targetIndex(targets, r.Target), r.Run)
		qps.Add(ql)
		qps.Legend.Add(fmt.Sprintf("%s (%.0f QPS overall)", seriesLabel(r, runs), r.QPS), ql)
		if len(l) > 0 {
			ll, err := plotter.NewLine(l)
			if err != nil {
				return err
			}
			style(ll, targetIndex(targets, r.Target), r.Run)
			lat.Add(ll)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no per-second lines")
	}
	if hi > 0 {
		lat.Y.Min, lat.Y.Max = decades(lo, hi, 1)
	}
	qps.Y.Max *= 1.3 // room for the legend
	lat.X.Min, qps.X.Min = 0, 0
	lat.X.Max = math.Max(lat.X.Max, qps.X.Max)
	qps.X.Max = lat.X.Max

	const w, h = 9 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(10)}
	plots := [][]*plot.Plot{{qps}, {lat}}
	canvases := plot.Align(plots, tiles, dc)
	qps.Draw(canvases[0][0])
	lat.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
