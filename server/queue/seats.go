package queue

import (
	"math"
	"strconv"
	"strings"
)

// maxRowWidth caps how many seats one row holds.
const maxRowWidth = 50

// RowWidth is how many seats each row of an event with n seats holds: the
// map is about twice as wide as deep, and never wider than 50.
func RowWidth(n int) int {
	w := int(math.Ceil(math.Sqrt(2 * float64(n))))
	return max(1, min(w, maxRowWidth, n))
}

// rowName is the spreadsheet-style name of 0-based row r: A..Z, AA..ZZ, AAA...
func rowName(r int) string {
	var b []byte
	for r++; r > 0; r = (r - 1) / 26 {
		b = append(b, byte('A'+(r-1)%26))
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// SeatID names the 0-based seat i of an event with n seats, e.g. "B-7".
func SeatID(n, i int) string {
	w := RowWidth(n)
	return rowName(i/w) + "-" + strconv.Itoa(i%w+1)
}

// rowIndex parses a row name into its 0-based row; ok is false for a
// malformed name.
func rowIndex(name string) (int, bool) {
	if name == "" || len(name) > 5 {
		return 0, false
	}
	r := 0
	for _, ch := range []byte(name) {
		if ch < 'A' || ch > 'Z' {
			return 0, false
		}
		r = r*26 + int(ch-'A') + 1
	}
	return r - 1, true
}

// SeatIndex parses a seat id of an event with n seats; ok is false for a
// malformed id or one outside the map.
func SeatIndex(n int, id string) (int, bool) {
	row, col, found := strings.Cut(id, "-")
	r, ok := rowIndex(row)
	if !found || !ok {
		return 0, false
	}
	c, err := strconv.Atoi(col)
	w := RowWidth(n)
	if err != nil || c < 1 || c > w || strconv.Itoa(c) != col {
		return 0, false
	}
	i := r*w + c - 1
	if i >= n {
		return 0, false
	}
	return i, true
}

// Seat is one place in an event's seat map.
type Seat struct {
	ID    string `json:"id"`
	Taken bool   `json:"taken"`
}

// AppendSeatJSON appends the seat {"id":…,"taken":…} as JSON to b.
func AppendSeatJSON(b []byte, id string, taken bool) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, id...) // letters, digits and a dash
	b = append(b, `","taken":`...)
	b = strconv.AppendBool(b, taken)
	return append(b, '}')
}
