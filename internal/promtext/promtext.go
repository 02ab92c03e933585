// Package promtext reads the Prometheus text exposition (a /metrics page)
// with github.com/prometheus/common/expfmt and flattens it into the few
// shapes the bench programs use: sums by metric name, values by series
// ("name{labels}" as exposed), label-filtered sums and histograms summed
// over their other labels.
package promtext

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one parsed scrape, by metric family name.
type Families map[string]*dto.MetricFamily

// Parse reads the text format.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	return Families(mfs), err
}

// Fetch GETs http://hostport/metrics (5 s timeout) and parses it.
func Fetch(ctx context.Context, hostport string) (Families, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+hostport+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", hostport, resp.Status)
	}
	return Parse(resp.Body)
}

// sample is one exposed line: its name (with _sum/_count/_bucket suffix for
// histograms and summaries), labels and value.
type sample struct {
	name   string
	labels []*dto.LabelPair
	value  float64
}

func (f Families) each(buckets, quantiles bool, fn func(s sample)) {
	for name, mf := range f {
		for _, m := range mf.GetMetric() {
			lp := m.GetLabel()
			switch {
			case m.Counter != nil:
				fn(sample{name, lp, m.GetCounter().GetValue()})
			case m.Gauge != nil:
				fn(sample{name, lp, m.GetGauge().GetValue()})
			case m.Untyped != nil:
				fn(sample{name, lp, m.GetUntyped().GetValue()})
			case m.Histogram != nil:
				h := m.GetHistogram()
				fn(sample{name + "_sum", lp, h.GetSampleSum()})
				fn(sample{name + "_count", lp, float64(h.GetSampleCount())})
				if buckets {
					for _, b := range h.GetBucket() {
						fn(sample{name + "_bucket", withLe(lp, b.GetUpperBound()), float64(b.GetCumulativeCount())})
					}
					if !hasInf(h) {
						fn(sample{name + "_bucket", withLe(lp, math.Inf(1)), float64(h.GetSampleCount())})
					}
				}
			case m.Summary != nil:
				s := m.GetSummary()
				if quantiles {
					for _, q := range s.GetQuantile() {
						fn(sample{name, withLabel(lp, "quantile", q.GetQuantile()), q.GetValue()})
					}
				}
				fn(sample{name + "_sum", lp, s.GetSampleSum()})
				fn(sample{name + "_count", lp, float64(s.GetSampleCount())})
			}
		}
	}
}

func withLe(lp []*dto.LabelPair, le float64) []*dto.LabelPair {
	return withLabel(lp, "le", le)
}

func withLabel(lp []*dto.LabelPair, name string, v float64) []*dto.LabelPair {
	return append(slices.Clone(lp), &dto.LabelPair{Name: ptr(name), Value: ptr(formatLe(v))})
}

func ptr(s string) *string { return &s }

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// ByName sums every sample over its labels: counters and gauges by their
// name, histograms and summaries as name_sum and name_count (no buckets).
func (f Families) ByName() map[string]float64 {
	out := map[string]float64{}
	f.each(false, false, func(s sample) { out[s.name] += s.value })
	return out
}

// Series maps every sample to its value by `name{k="v",...}` (labels sorted
// by name, as client_golang exposes them; just `name` without labels):
// counters, gauges, summaries' quantiles (`name{...,quantile="0.5"}`),
// _sum and _count, and histogram buckets (`name_bucket{...,le="0.5"}`) when
// buckets is true.
func (f Families) Series(buckets bool) map[string]float64 {
	out := map[string]float64{}
	f.each(buckets, true, func(s sample) { out[SeriesKey(s.name, s.labels)] += s.value })
	return out
}

// SeriesKey formats a name and labels as the text format shows them.
func SeriesKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	lp := slices.Clone(labels)
	sort.SliceStable(lp, func(i, j int) bool {
		a, b := lp[i].GetName(), lp[j].GetName()
		if last(a) || last(b) {
			return last(b) && !last(a)
		}
		return a < b
	})
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range lp {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.GetName())
		b.WriteString(`="`)
		b.WriteString(escaper.Replace(l.GetValue()))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// last tells the labels client_golang writes after the others: a
// histogram bucket's le and a summary's quantile.
func last(label string) bool { return label == "le" || label == "quantile" }

var escaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// Sum adds the samples of name (a family name, or a histogram's or
// summary's name_sum / name_count) whose labels include every pair of
// match.
func (f Families) Sum(name string, match map[string]string) float64 {
	var total float64
	f.each(false, false, func(s sample) {
		if s.name != name {
			return
		}
		for k, v := range match {
			found := false
			for _, l := range s.labels {
				if l.GetName() == k && l.GetValue() == v {
					found = true
					break
				}
			}
			if !found {
				return
			}
		}
		total += s.value
	})
	return total
}

// Histogram is a histogram family summed over its labels.
type Histogram struct {
	Les        []float64 // ascending upper bounds, +Inf last
	Cum        []float64 // cumulative counts per bound
	Sum, Count float64
}

// Histogram returns family name summed over its label sets (nil if the
// family is absent or not a histogram).
func (f Families) Histogram(name string) *Histogram {
	mf := f[name]
	if mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM {
		return nil
	}
	byLe := map[float64]float64{}
	h := &Histogram{}
	for _, m := range mf.GetMetric() {
		hm := m.GetHistogram()
		if hm == nil {
			continue
		}
		h.Sum += hm.GetSampleSum()
		h.Count += float64(hm.GetSampleCount())
		for _, b := range hm.GetBucket() {
			byLe[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		if !hasInf(hm) {
			byLe[math.Inf(1)] += float64(hm.GetSampleCount())
		}
	}
	for le := range byLe {
		h.Les = append(h.Les, le)
	}
	sort.Float64s(h.Les)
	for _, le := range h.Les {
		h.Cum = append(h.Cum, byLe[le])
	}
	return h
}

// hasInf tells whether a histogram lists its +Inf bucket (the text parser
// keeps it; client_golang's in-memory histograms do not).
func hasInf(h *dto.Histogram) bool {
	b := h.GetBucket()
	return len(b) > 0 && math.IsInf(b[len(b)-1].GetUpperBound(), 1)
}
