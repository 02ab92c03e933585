package pd

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdNoise are etcd startup warnings about choices PD makes on purpose.
var etcdNoise = []string{
	"Running http and grpc server on single port",
	"simple token is not cryptographically signed",
}

// slogCore forwards the embedded etcd's zap logs to slog, at or above level,
// so PD emits one structured log stream. While the server shuts down it drops
// warnings and the listener-closed errors etcd reports for its own serving
// goroutines.
type slogCore struct {
	log      *slog.Logger
	level    zapcore.Level
	fields   []zapcore.Field
	stopping *atomic.Bool
}

func newEtcdZapLogger(log *slog.Logger, level string, stopping *atomic.Bool) *zap.Logger {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		lvl = zapcore.WarnLevel
	}
	return zap.New(&slogCore{log: log, level: lvl, stopping: stopping})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.level }

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	cp := *c
	cp.fields = append(append([]zapcore.Field(nil), c.fields...), fs...)
	return &cp
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.Enabled(e.Level) {
		return ce
	}
	if c.stopping.Load() && (e.Level < zapcore.ErrorLevel || strings.Contains(e.Message, "serving from embedded etcd failed")) {
		return ce
	}
	for _, m := range etcdNoise {
		if strings.Contains(e.Message, m) {
			return ce
		}
	}
	return ce.AddCore(e, c)
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	var lvl slog.Level
	switch {
	case e.Level >= zapcore.ErrorLevel:
		lvl = slog.LevelError
	case e.Level == zapcore.WarnLevel:
		lvl = slog.LevelWarn
	case e.Level == zapcore.InfoLevel:
		lvl = slog.LevelInfo
	default:
		lvl = slog.LevelDebug
	}
	c.log.LogAttrs(context.Background(), lvl, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
