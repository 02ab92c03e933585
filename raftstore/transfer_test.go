package raftstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBetterTransferee(t *testing.T) {
	tests := []struct {
		name  string
		cands []transferCandidate
		want  uint64
	}{
		{"none", nil, 0},
		{"one", []transferCandidate{{id: 2, match: 5}}, 2},
		{"highest-match", []transferCandidate{{id: 2, match: 5, active: true}, {id: 3, match: 9, active: true}}, 3},
		{"active-beats-match", []transferCandidate{{id: 2, match: 5, active: true}, {id: 3, match: 9}}, 2},
		{"inactive-only", []transferCandidate{{id: 3, match: 4}, {id: 2, match: 7}}, 2},
		{"tie-lowest-id", []transferCandidate{{id: 4, match: 7, active: true}, {id: 2, match: 7, active: true}}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var best transferCandidate
			for _, c := range tc.cands {
				if betterTransferee(c, best) {
					best = c
				}
			}
			require.Equal(t, tc.want, best.id)
		})
	}
}
