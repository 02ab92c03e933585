package schedule

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	operatorsCreated = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "operators_created_total",
		Help: "Operators created, by type (desc) and kind.",
	}, []string{"type", "kind"})
	operatorsFinished = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "operators_finished_total",
		Help: "Operators finished, by type (desc) and outcome (SUCCESS, TIMEOUT, CANCELED, REPLACED).",
	}, []string{"type", "outcome"})
	operatorDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pd", Name: "operator_duration_seconds",
		Help:    "Time from an operator's creation to its success, by type.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
	}, []string{"type"})
	operatorsRunning = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "operators_running",
		Help: "Operators running, by kind.",
	}, []string{"kind"})
	schedulerRunSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pd", Name: "scheduler_run_seconds",
		Help:    "Duration of one run of a scheduler or checker patrol.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
	}, []string{"scheduler"})
	storeStateGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "store_states",
		Help: "Stores by state (Up, Disconnected, Down, Offline, Tombstone).",
	}, []string{"state"})
	storeRegionsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "store_regions",
		Help: "Region peers and leaders per store.",
	}, []string{"store", "type"})
	unhealthyRegionsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "regions_unhealthy",
		Help: "Regions found by the last patrol, by problem (miss-peer, down-peer, offline-peer, extra-peer, learner-peer, location).",
	}, []string{"type"})
	hotRegionsGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "hot_write_regions",
		Help: "Regions whose write flow is above the hot threshold.",
	})
	affinityGroupsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "affinity_groups",
		Help: "Affinity groups by phase (pending, preparing, stable).",
	}, []string{"phase"})
	affinityRegionsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "affinity_regions",
		Help: "Regions of affinity groups (total) and those on their group's target stores with its leader (satisfied).",
	}, []string{"state"})
)
