package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store/storetest"
)

func TestPriorityGrants(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			s := storetest.MustOpen(t, dialect)
			ctx := context.Background()
			g := func(kind queue.GrantKind, v string) queue.Grant {
				return queue.Grant{EventID: "ev1", Kind: kind, Value: v}
			}
			if err := s.PutGrants(ctx, []queue.Grant{g(queue.GrantUser, "u_a"), g(queue.GrantCode, "VIP-1"), g(queue.GrantCode, "VIP-2"),
				g(queue.GrantUser, "zz"), g(queue.GrantCode, "zz")}); err != nil {
				t.Fatal(err)
			}
			// A joined record that redeemed a code marks it, first redeemer wins.
			j1 := rec("1000-0", queue.RecordJoined, 1, "u_b", t0)
			j1.Lane, j1.PriorityCode = queue.LanePriority, "VIP-1"
			j2 := rec("1000-1", queue.RecordJoined, 2, "u_c", t0.Add(ms))
			j2.Lane, j2.PriorityCode = queue.LanePriority, "VIP-1"
			if _, err := s.WriteRecords(ctx, []queue.Record{j1}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.WriteRecords(ctx, []queue.Record{j2}); err != nil {
				t.Fatal(err)
			}
			// Granting again leaves a redeemed code redeemed.
			if err := s.PutGrants(ctx, []queue.Grant{g(queue.GrantCode, "VIP-1")}); err != nil {
				t.Fatal(err)
			}
			// A delete names its kind: code "zz" goes, user "zz" stays.
			for _, v := range []string{"VIP-2", "zz"} {
				if err := s.DeleteGrant(ctx, "ev1", queue.GrantCode, v); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Grants(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			want := "[{ev1 user u_a } {ev1 user zz } {ev1 code VIP-1 u_b}]"
			if fmt.Sprint(got) != want {
				t.Fatalf("grants %v, want %s", got, want)
			}
		})
	}
}

func TestRecordLane(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			s := storetest.MustOpen(t, dialect)
			ctx := context.Background()
			p := func(r queue.Record) queue.Record { r.Lane = queue.LanePriority; return r }
			// The admitted record of the priority attempt arrives before its
			// joined record, in another batch: the lane holds either way.
			batches := [][]queue.Record{
				{p(rec("2000-0", queue.RecordAdmitted, 1, "u_p", t0.Add(time.Second))), rec("1000-1", queue.RecordJoined, 2, "u_n", t0.Add(ms))},
				{p(rec("1000-0", queue.RecordJoined, 1, "u_p", t0)), rec("2000-1", queue.RecordAdmitted, 2, "u_n", t0.Add(time.Second))},
			}
			for _, b := range batches {
				if _, err := s.WriteRecords(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			ens, err := s.Entries(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			if len(ens) != 2 || ens[0].Lane != queue.LanePriority || ens[1].Lane != queue.LaneNormal || ens[0].Status != queue.StatusActive {
				t.Fatalf("entries %+v", ens)
			}
			for seq, want := range map[int64]queue.Lane{1: queue.LanePriority, 2: queue.LaneNormal} {
				trs, err := s.Transitions(ctx, "ev1", seq)
				if err != nil {
					t.Fatal(err)
				}
				for _, tr := range trs {
					if tr.Lane != want {
						t.Fatalf("seq %d transition %+v, want lane %q", seq, tr, want)
					}
				}
			}
		})
	}
}
