package steps

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// grade is one seat grade: its share of the rows, front first, and price.
type grade struct {
	ID string
	// Upto is the share of the rows, counted from the front, up to the end
	// of this grade.
	Upto  float64
	Price int
}

// theGrades are the seat grades of every map, as Korean concert halls
// price them: VIP at the front, then R, S and A.
var theGrades = []grade{
	{ID: "VIP", Upto: 0.2, Price: 165_000},
	{ID: "R", Upto: 0.5, Price: 143_000},
	{ID: "S", Upto: 0.8, Price: 121_000},
	{ID: "A", Upto: 1, Price: 99_000},
}

// GradeMap is one grade of an event's map, or one block of a grade too
// big for one map (over queue.MaxSeatList seats: "R1", "R2", …): its rows,
// price and free seats.
type GradeMap struct {
	ID string `json:"id"`
	// Grade is the seat grade (VIP, R, S, A); ID adds the block's number.
	Grade string `json:"grade"`
	Price int    `json:"price"`
	// FirstRow and LastRow name the grade's rows; First and Last its first
	// and last seats.
	FirstRow string `json:"first_row"`
	LastRow  string `json:"last_row"`
	Seats    int    `json:"seats"`
	// Free counts the seats neither sold nor held by another active attempt.
	Free  int `json:"free"`
	first int // 0-based seat span
	n     int
}

// rows is how many rows an event of n seats has.
func rows(n int) int {
	w := queue.RowWidth(n)
	return (n + w - 1) / w
}

// layout splits an event of n seats into grades of whole rows, front
// first; a grade with no row is left out, and one over queue.MaxSeatList
// seats comes in blocks of whole rows, so that one grade's map stays as
// small as API.md's seat lists.
func layout(n int) []GradeMap {
	w, r := queue.RowWidth(n), rows(n)
	per := max(1, queue.MaxSeatList/w) // rows in a block
	var out []GradeMap
	from := 0
	for _, g := range theGrades {
		to := min(r, int(math.Ceil(g.Upto*float64(r))))
		if to <= from {
			continue
		}
		blocks := (to - from + per - 1) / per
		for k := range blocks {
			a, b := from+k*per, min(to, from+(k+1)*per)
			first, last := a*w, min(n, b*w)-1
			id := g.ID
			if blocks > 1 {
				id += strconv.Itoa(k + 1)
			}
			out = append(out, GradeMap{ID: id, Grade: g.ID, Price: g.Price, FirstRow: rowOf(n, first), LastRow: rowOf(n, last),
				Seats: last - first + 1, first: first, n: last - first + 1})
		}
		from = to
	}
	return out
}

// rowOf is the row name of seat i of an event of n seats.
func rowOf(n, i int) string {
	row, _, _ := strings.Cut(queue.SeatID(n, i), "-")
	return row
}

// gradeOf is the grade of seat i of an event of n seats.
func gradeOf(n, i int) GradeMap {
	l := layout(n)
	for _, g := range l {
		if i < g.first+g.n {
			return g
		}
	}
	return l[len(l)-1]
}

// blocked reads which seats of ev the active attempt en may not pick:
// sold (from the seat map snapshot every reader of the event shares, see
// queue.SeatMaps, so a crowd on its seat maps costs a few reads of the map
// a second), or held by another active attempt.
func (s *Service) blocked(ctx context.Context, ev queue.Event, en queue.Entry) ([]bool, error) {
	m, err := s.maps.Get(ctx, ev, en.Token)
	if err != nil {
		return nil, err
	}
	out := make([]bool, ev.Seats)
	for i := range out {
		out[i] = m.Taken(i)
	}
	holds, err := s.rdb.HGetAll(ctx, queue.EventKey(ev.ID, "hd")).Result()
	if err != nil {
		return nil, queue.Unavailable(err)
	}
	me := en.UserID + "|" + strconv.FormatInt(en.Seq, 10)
	var users []string
	var held []string
	for seat, h := range holds {
		if h != me {
			u, _, _ := cutLast(h)
			users = append(users, u)
			held = append(held, seat)
		}
	}
	if len(users) == 0 {
		return out, nil
	}
	act, err := s.rdb.HMGet(ctx, queue.EventKey(ev.ID, "as"), users...).Result()
	if err != nil {
		return nil, queue.Unavailable(err)
	}
	for k, v := range act {
		_, seq, _ := cutLast(holds[held[k]])
		a, _ := v.(string)
		if aseq, _, ok := strings.Cut(a, "|"); ok && aseq == seq {
			if i, ok := queue.SeatIndex(ev.Seats, held[k]); ok {
				out[i] = true
			}
		}
	}
	return out, nil
}

// cutLast splits "user|seq" at its last bar.
func cutLast(h string) (user, seq string, ok bool) {
	i := strings.LastIndexByte(h, '|')
	if i < 0 {
		return h, "", false
	}
	return h[:i], h[i+1:], true
}

// grades is ev's grades with their free seats as en sees them; without
// free seats for an attempt no longer active.
func (s *Service) grades(ctx context.Context, ev queue.Event, en queue.Entry) ([]GradeMap, error) {
	gs := layout(ev.Seats)
	if en.Status != queue.StatusActive {
		return gs, nil
	}
	b, err := s.blocked(ctx, ev, en)
	if err != nil {
		return nil, err
	}
	for k := range gs {
		for i := gs[k].first; i < gs[k].first+gs[k].n; i++ {
			if !b[i] {
				gs[k].Free++
			}
		}
	}
	return gs, nil
}

// Seats is the seat map of one grade of eventID, for the holder of an
// active token: a seat another active attempt holds shows as taken.
func (s *Service) Seats(ctx context.Context, eventID, token, gradeID string) ([]queue.Seat, error) {
	a, err := s.active(ctx, eventID, token)
	if err != nil {
		return nil, err
	}
	var g *GradeMap
	for _, x := range layout(a.ev.Seats) {
		if x.ID == gradeID {
			g = &x
		}
	}
	if g == nil {
		return nil, queue.Errorf(queue.CodeSeatNotFound, "no seat grade %q in event %q", gradeID, eventID)
	}
	b, err := s.blocked(ctx, a.ev, a.en)
	if err != nil {
		return nil, err
	}
	out := make([]queue.Seat, g.n)
	for k := range out {
		out[k] = queue.Seat{ID: queue.SeatID(a.ev.Seats, g.first+k), Taken: b[g.first+k]}
	}
	return out, nil
}

// Show is one performance of an event to pick at the "date" step.
type Show struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// seoul is Korea's time: the shows are at fixed local hours there.
var seoul = time.FixedZone("KST", 9*60*60)

// Shows are an event's performances: four weeks after its opening, an
// evening show, then a matinee and an evening show the next day.
func Shows(ev queue.Event) []Show {
	base := ev.CreatedAt
	if ev.OpensAt != nil {
		base = *ev.OpensAt
	}
	d := base.In(seoul).AddDate(0, 0, 28)
	day := func(add, h, m int) time.Time {
		return time.Date(d.Year(), d.Month(), d.Day()+add, h, m, 0, 0, seoul)
	}
	return []Show{{ID: "1", At: day(0, 19, 30)}, {ID: "2", At: day(1, 14, 0)}, {ID: "3", At: day(1, 19, 30)}}
}
