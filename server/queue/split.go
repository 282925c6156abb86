package queue

import (
	"encoding/binary"
	"fmt"
)

// Values of one call's answer as join.lua and verify.lua give it whole, and
// values at the end of their reply shared by every call of the run.
const (
	joinWidth, joinShared     = 9, 3
	verifyWidth, verifyShared = 5, 5
)

// A splitter cuts the reply of a script that takes a run of calls one after
// the other (join.lua, verify.lua) into each call's answer, in the layout
// the call gets alone: its values, then the shared ones. into holds one
// empty buffer per call of the run; it appends each call's answer to its
// buffer.
type splitter func(reply []any, into [][]any) error

// Parts of answers expanded from compact ones, boxed once.
var (
	valNew, valWaiting, valNoLane any = "NEW", string(StatusWaiting), ""
	valZero                       any = int64(0)
)

// cutShared splits a reply into its answers and the n values that end it.
func cutShared(what string, reply []any, n int) (items, shared []any, err error) {
	if len(reply) < n {
		return nil, nil, fmt.Errorf("queue: %s reply of %d values", what, len(reply))
	}
	return reply[:len(reply)-n], reply[len(reply)-n:], nil
}

// splitJoin cuts join.lua's reply: a run item {k, seq, place, admitted}
// answers k new joins put in the normal lane one after the other (seq and
// place, which is also the line's length, one more for each); any other
// answer is joinWidth values, led by a string.
func splitJoin(reply []any, into [][]any) error {
	items, shared, err := cutShared("join", reply, joinShared)
	if err != nil {
		return err
	}
	i := 0
	for len(items) > 0 {
		if k, ok := items[0].(int64); ok {
			if len(items) < 4 || i+int(k) > len(into) || k < 1 {
				return fmt.Errorf("queue: join reply: bad run at answer %d", i)
			}
			seq, place, admitted := toInt(items[1]), toInt(items[2]), items[3]
			for j := range k {
				p := any(place + j)
				into[i] = append(into[i], valNew, valWaiting, any(seq+j), p, p, valZero, valZero, valNoLane, admitted)
				into[i] = append(into[i], shared...)
				i++
			}
			items = items[4:]
			continue
		}
		if len(items) < joinWidth || i >= len(into) {
			return fmt.Errorf("queue: join reply: %d values left at answer %d of %d", len(items), i, len(into))
		}
		into[i] = append(append(into[i], items[:joinWidth]...), shared...)
		items = items[joinWidth:]
		i++
	}
	if i != len(into) {
		return fmt.Errorf("queue: join reply answers %d of %d joins", i, len(into))
	}
	return nil
}

// splitVerify cuts verify.lua's reply: an integer alone is the place of an
// attempt waiting in the normal lane; any other answer is verifyWidth
// values, led by its status.
func splitVerify(reply []any, into [][]any) error {
	items, shared, err := cutShared("status", reply, verifyShared)
	if err != nil {
		return err
	}
	i := 0
	for len(items) > 0 && i < len(into) {
		if _, ok := items[0].(int64); ok {
			into[i] = append(into[i], valWaiting, items[0], valZero, valZero, valNoLane)
			into[i] = append(into[i], shared...)
			items = items[1:]
			i++
			continue
		}
		if len(items) < verifyWidth {
			break
		}
		into[i] = append(append(into[i], items[:verifyWidth]...), shared...)
		items = items[verifyWidth:]
		i++
	}
	if i != len(into) || len(items) > 0 {
		return fmt.Errorf("queue: status reply answers %d of %d lookups (%d values left)", i, len(into), len(items))
	}
	return nil
}

// joinArgv is one join's ARGV for join.lua past NOW and MAXLEN: its msgpack
// values (the user id alone when the join brings nothing else, false and
// the user id when it brings only its proof, else true and all five), then
// 1 (one join), then, for the first kind (a plain join), the user id: a run
// of joins goes as one call of the values concatenated, their count, and
// the user ids one a line when every join of the run is a plain one (see
// concatArgs and lua/join.lua).
func joinArgv(user string, o JoinOptions) []any {
	switch {
	case o.PriorityCode != "" || o.Priority || o.Device != "":
		b := make([]byte, 0, len(user)+len(o.PriorityCode)+len(o.Device)+16)
		b = append(b, mpTrue)
		for _, v := range [...]string{user, o.PriorityCode, flag(o.Priority).(string), o.Device, flag(o.Proven).(string)} {
			b = appendStr(b, v)
		}
		return []any{b, one}
	case o.Proven:
		return []any{appendStr(append(make([]byte, 0, len(user)+6), mpFalse), user), one}
	}
	return []any{appendStr(make([]byte, 0, len(user)+5), user), one, user}
}

// one is a call's count of joins in joinArgv, made once.
var one any = int64(1)

// The msgpack bytes of false and true: join.lua's markers of a join given
// with its proof alone, and of one given in full.
const (
	mpFalse = 0xc2
	mpTrue  = 0xc3
)

// appendStr appends s to b as a msgpack str.
func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 1<<8:
		b = append(b, 0xd9, byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// lookupArg is one status lookup's argument for verify.lua: the user id as a
// msgpack str, then the seq as a msgpack uint. A run's lookups go as the
// concatenation of theirs (concatArgs).
func lookupArg(user string, seq int64) []byte {
	b := appendStr(make([]byte, 0, len(user)+14), user)
	u := uint64(max(seq, 0))
	switch {
	case u < 128:
		return append(b, byte(u))
	case u < 1<<32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
}

// lookupParts reads back the user id and seq of one lookup lookupArg wrote;
// ok is false for anything else.
func lookupParts(b []byte) (user string, seq int64, ok bool) {
	if len(b) == 0 {
		return "", 0, false
	}
	n, head := 0, 0
	switch t := b[0]; {
	case t&0xe0 == 0xa0:
		n, head = int(t&0x1f), 1
	case t == 0xd9 && len(b) >= 2:
		n, head = int(b[1]), 2
	case t == 0xda && len(b) >= 3:
		n, head = int(binary.BigEndian.Uint16(b[1:])), 3
	case t == 0xdb && len(b) >= 5:
		n, head = int(binary.BigEndian.Uint32(b[1:])), 5
	default:
		return "", 0, false
	}
	if len(b) < head+n+1 {
		return "", 0, false
	}
	user, rest := string(b[head:head+n]), b[head+n:]
	switch t := rest[0]; {
	case t < 0x80 && len(rest) == 1:
		return user, int64(t), true
	case t == 0xce && len(rest) == 5:
		return user, int64(binary.BigEndian.Uint32(rest[1:])), true
	case t == 0xcf && len(rest) == 9:
		if u := binary.BigEndian.Uint64(rest[1:]); u <= 1<<62 {
			return user, int64(u), true
		}
	}
	return "", 0, false
}
