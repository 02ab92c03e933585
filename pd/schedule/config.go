package schedule

import (
	"fmt"
	"time"
)

// Config is the scheduling configuration (PD's `config` API). The zero
// value of a field means its default (see Defaults).
type Config struct {
	// MaxReplicas is the number of voters every region should have.
	MaxReplicas int `json:"max-replicas"`
	// LocationLabels name the store labels of the failure-domain
	// hierarchy, most significant first (e.g. ["zone", "host"]): replicas
	// of a region are spread over different values when stores allow.
	LocationLabels []string `json:"location-labels"`
	// MaxStoreDownTime: a store without a heartbeat for this long is Down
	// and its replicas are rebuilt elsewhere.
	MaxStoreDownTime Duration `json:"max-store-down-time"`
	// DisconnectTime: a store without a heartbeat for this long is
	// Disconnected (no new replicas are placed on it).
	DisconnectTime Duration `json:"disconnect-time"`
	// LeaderScheduleLimit, RegionScheduleLimit and ReplicaScheduleLimit cap
	// the operators of each kind running at once.
	LeaderScheduleLimit  int `json:"leader-schedule-limit"`
	RegionScheduleLimit  int `json:"region-schedule-limit"`
	ReplicaScheduleLimit int `json:"replica-schedule-limit"`
	// StoreLimit is how many peers may be added to (and, separately,
	// removed from) one store per minute (TiDB's store limit).
	StoreLimit float64 `json:"store-limit"`
	// ScheduleInterval is how often the coordinator runs.
	ScheduleInterval Duration `json:"schedule-interval"`
	// LeaderOpTimeout and RegionOpTimeout bound an operator's life.
	LeaderOpTimeout Duration `json:"leader-operator-timeout"`
	RegionOpTimeout Duration `json:"region-operator-timeout"`
	// Schedulers enabled by name (balance-leader-scheduler, ...).
	DisabledSchedulers []string `json:"disabled-schedulers"`
	// AffinityTables are the ids of the tables whose regions form an
	// affinity group (affinity.go); none by default, as in TiDB, where a
	// table opts in with AFFINITY = 'table'.
	AffinityTables []int64 `json:"affinity-tables"`
	// AffinityScheduleLimit caps the affinity operators running at once
	// (TiDB's schedule.affinity-schedule-limit).
	AffinityScheduleLimit int `json:"affinity-schedule-limit"`
}

// Duration is a time.Duration that reads and writes JSON as "30m0s" (PD's
// form); a number is read as seconds.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		v, err := time.ParseDuration(s[1 : len(s)-1])
		if err != nil {
			return fmt.Errorf("schedule: bad duration %s: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err != nil {
		return fmt.Errorf("schedule: bad duration %s", s)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Defaults returns c with every zero field set to PD's default.
func (c Config) Defaults() Config {
	if c.MaxReplicas == 0 {
		c.MaxReplicas = 3
	}
	if c.MaxStoreDownTime == 0 {
		c.MaxStoreDownTime = Duration(30 * time.Minute)
	}
	if c.DisconnectTime == 0 {
		c.DisconnectTime = Duration(20 * time.Second)
	}
	if c.LeaderScheduleLimit == 0 {
		c.LeaderScheduleLimit = 4
	}
	if c.RegionScheduleLimit == 0 {
		c.RegionScheduleLimit = 64
	}
	if c.ReplicaScheduleLimit == 0 {
		c.ReplicaScheduleLimit = 64
	}
	if c.StoreLimit == 0 {
		c.StoreLimit = 15
	}
	if c.AffinityScheduleLimit == 0 {
		c.AffinityScheduleLimit = 4
	}
	if c.ScheduleInterval == 0 {
		c.ScheduleInterval = Duration(time.Second)
	}
	if c.LeaderOpTimeout == 0 {
		c.LeaderOpTimeout = Duration(10 * time.Second)
	}
	if c.RegionOpTimeout == 0 {
		c.RegionOpTimeout = Duration(3 * time.Minute)
	}
	return c
}

// Validate checks c (after Defaults).
func (c Config) Validate() error {
	switch {
	case c.MaxReplicas < 1 || c.MaxReplicas > 9:
		return fmt.Errorf("schedule: max-replicas must be 1..9, got %d", c.MaxReplicas)
	case c.MaxStoreDownTime.D() < time.Second:
		return fmt.Errorf("schedule: max-store-down-time must be >= 1s, got %v", c.MaxStoreDownTime.D())
	case c.LeaderScheduleLimit < 0 || c.RegionScheduleLimit < 0 || c.ReplicaScheduleLimit < 0 || c.AffinityScheduleLimit < 0:
		return fmt.Errorf("schedule: schedule limits must be >= 0")
	case c.StoreLimit <= 0:
		return fmt.Errorf("schedule: store-limit must be > 0, got %g", c.StoreLimit)
	case c.ScheduleInterval.D() < 10*time.Millisecond:
		return fmt.Errorf("schedule: schedule-interval must be >= 10ms")
	}
	seen := map[int64]bool{}
	for _, id := range c.AffinityTables {
		if id <= 0 || seen[id] {
			return fmt.Errorf("schedule: affinity-tables must be distinct positive table ids, got %v", c.AffinityTables)
		}
		seen[id] = true
	}
	for _, n := range c.DisabledSchedulers {
		if !knownScheduler(n) {
			return fmt.Errorf("schedule: unknown scheduler %q", n)
		}
	}
	return nil
}

func (c Config) schedulerEnabled(name string) bool {
	for _, n := range c.DisabledSchedulers {
		if n == name {
			return false
		}
	}
	return true
}
