// Package auth holds rushline's credentials: the four server keys, the
// session tokens of ACTUAL users and the passes that order services check
// offline. It knows nothing of HTTP; the HTTP package reads headers and calls
// in here.
package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KeysFile is the name of the key file inside the data folder.
const KeysFile = "keys.json"

// keyBytes is the entropy of a generated key.
const keyBytes = 32

// linkFile is os.Link; tests replace it to take the no-hard-link path.
var linkFile = os.Link

// Keys are the server's shared secrets (API.md, "Identities and credentials").
// An empty field means "not given". The keys that callers present are
// checked against their hashed forms (AdminKey, SimulatorKey, ServiceKey),
// which Hashed computes once.
type Keys struct {
	Admin     string // X-Admin-Key
	Simulator string // X-Simulator-Key
	Service   string // X-Service-Key, also the key that signs passes
	JWTSecret string // signs session tokens

	// admin, simulator and service are Admin, Simulator and Service as
	// Hashed found them; unset (matching nothing) before Hashed.
	admin, simulator, service Key
}

// Hashed returns k with Admin, Simulator and Service hashed for Equal. The
// hashes do not follow later changes to those fields: hash again after one.
func (k Keys) Hashed() Keys {
	k.admin, k.simulator, k.service = NewKey(k.Admin), NewKey(k.Simulator), NewKey(k.Service)
	return k
}

// AdminKey is Admin as Hashed found it.
func (k Keys) AdminKey() Key { return k.admin }

// SimulatorKey is Simulator as Hashed found it.
func (k Keys) SimulatorKey() Key { return k.simulator }

// ServiceKey is Service as Hashed found it.
func (k Keys) ServiceKey() Key { return k.service }

// String hides the values, so a logged Keys leaks nothing.
func (k Keys) String() string {
	show := func(v string) string {
		if v == "" {
			return "unset"
		}
		return "set"
	}
	return fmt.Sprintf("auth.Keys{Admin:%s Simulator:%s Service:%s JWTSecret:%s}",
		show(k.Admin), show(k.Simulator), show(k.Service), show(k.JWTSecret))
}

// GoString keeps %#v from printing the secrets too.
func (k Keys) GoString() string { return k.String() }

// missing names the fields that are unset.
func (k Keys) missing() []string {
	var names []string
	for _, f := range []struct{ name, v string }{
		{"admin_key", k.Admin},
		{"simulator_key", k.Simulator},
		{"service_key", k.Service},
		{"jwt_secret", k.JWTSecret},
	} {
		if f.v == "" {
			names = append(names, f.name)
		}
	}
	return names
}

// orElse returns k with its unset fields taken from d.
func (k Keys) orElse(d Keys) Keys {
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	return Keys{
		Admin:     pick(k.Admin, d.Admin),
		Simulator: pick(k.Simulator, d.Simulator),
		Service:   pick(k.Service, d.Service),
		JWTSecret: pick(k.JWTSecret, d.JWTSecret),
	}
}

// normalized treats blank values (an exported but empty variable) as unset.
func (k Keys) normalized() Keys {
	blank := func(v string) string {
		if strings.TrimSpace(v) == "" {
			return ""
		}
		return v
	}
	return Keys{Admin: blank(k.Admin), Simulator: blank(k.Simulator), Service: blank(k.Service), JWTSecret: blank(k.JWTSecret)}
}

// keysFile is the on-disk form of Keys.
type keysFile struct {
	Note      string `json:"note,omitempty"`
	Admin     string `json:"admin_key"`
	Simulator string `json:"simulator_key"`
	Service   string `json:"service_key"`
	JWTSecret string `json:"jwt_secret"`
}

const fileNote = "rushline keys, made at first start; flags and RUSHLINE_* environment variables override them"

// LoadOrCreate completes given with the keys kept in dir/keys.json. Values in
// given win. When the file does not exist it is made (mode 0600, dir 0700)
// with a full set of fresh keys, so a later start without flags finds every
// key there. It returns the keys and the file's path; when given is already
// complete the disk is not touched and the path is "".
//
// Processes that start at once on the same dir agree on one key set: the file
// appears atomically with a hard link that fails if it exists, and the loser
// reads the winner's file. A file that lacks a key that was not given is an
// error, never silently replaced.
func LoadOrCreate(dir string, given Keys) (Keys, string, error) {
	given = given.normalized()
	if len(given.missing()) == 0 {
		return given, "", nil
	}
	if dir == "" {
		return Keys{}, "", fmt.Errorf("auth: no data folder to keep %s in", strings.Join(given.missing(), ", "))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Keys{}, "", fmt.Errorf("auth: make data folder: %w", err)
	}
	path := filepath.Join(dir, KeysFile)

	stored, err := readKeys(path)
	if errors.Is(err, fs.ErrNotExist) {
		stored, err = createKeys(path)
	}
	if err != nil {
		return Keys{}, "", err
	}

	keys := given.orElse(stored.normalized())
	if missing := keys.missing(); len(missing) > 0 {
		return Keys{}, "", fmt.Errorf("auth: %s lacks %s; add them, pass them as flags, or remove the file to make a new set",
			path, strings.Join(missing, ", "))
	}
	return keys, path, nil
}

// readKeys reads a key file. An empty or cut-off file may still be being
// written by another process (only the no-hard-link fallback writes the file
// in place), so those are read again for a moment before giving up.
func readKeys(path string) (Keys, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			return Keys{}, fmt.Errorf("auth: read %s: %w", path, err)
		}
		var f keysFile
		err = json.NewDecoder(bytes.NewReader(data)).Decode(&f)
		if err == nil {
			return Keys{Admin: f.Admin, Simulator: f.Simulator, Service: f.Service, JWTSecret: f.JWTSecret}, nil
		}
		partial := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if !partial || time.Now().After(deadline) {
			return Keys{}, fmt.Errorf("auth: %s is not a valid key file: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createKeys writes a fresh, complete key set to path unless the file exists,
// and returns whichever set ends up there.
func createKeys(path string) (Keys, error) {
	keys := Keys{Admin: newKey(), Simulator: newKey(), Service: newKey(), JWTSecret: newKey()}
	data, err := json.MarshalIndent(keysFile{
		Note:      fileNote,
		Admin:     keys.Admin,
		Simulator: keys.Simulator,
		Service:   keys.Service,
		JWTSecret: keys.JWTSecret,
	}, "", "  ")
	if err != nil {
		return Keys{}, fmt.Errorf("auth: encode keys: %w", err)
	}
	data = append(data, '\n')

	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".keys-*.tmp") // mode 0600
	if err != nil {
		return Keys{}, fmt.Errorf("auth: write keys: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeSync(tmp, data); err != nil {
		return Keys{}, fmt.Errorf("auth: write keys: %w", err)
	}

	// A hard link publishes the complete file in one step and, unlike
	// rename, fails when another process got there first.
	err = linkFile(tmp.Name(), path)
	switch {
	case err == nil:
		syncDir(dir)
		return keys, nil
	case errors.Is(err, fs.ErrExist):
		return readKeys(path)
	}

	// No hard links on this file system: create in place, exclusively.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readKeys(path)
	}
	if err != nil {
		return Keys{}, fmt.Errorf("auth: write keys: %w", err)
	}
	if err := writeSync(f, data); err != nil {
		os.Remove(path)
		return Keys{}, fmt.Errorf("auth: write keys: %w", err)
	}
	syncDir(dir)
	return keys, nil
}

func writeSync(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes the new directory entry durable; failure is harmless
// (some systems cannot sync directories).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// newKey returns 32 random bytes, base64url without padding (43 characters).
func newKey() string {
	b := make([]byte, keyBytes)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b)
}

// Key is a configured key in the form presented keys are checked against:
// its SHA-256 digest, taken once when the key is loaded (Keys.Hashed). The
// zero Key is unset and matches nothing.
type Key struct {
	digest [sha256.Size]byte
	set    bool
}

// NewKey hashes a configured key; "" gives the unset Key.
func NewKey(v string) Key {
	if v == "" {
		return Key{}
	}
	return Key{digest: sha256.Sum256([]byte(v)), set: true}
}

// String hides the digest, so a logged Key leaks nothing.
func (k Key) String() string {
	if k.set {
		return "auth.Key{set}"
	}
	return "auth.Key{unset}"
}

// GoString keeps %#v from printing the digest too.
func (k Key) GoString() string { return k.String() }

// Equal reports whether a presented key matches the configured key k, in
// time independent of where they differ and of their lengths: only the
// presented key is hashed, and the digests are compared in constant time.
// An empty presented key or an unset k never matches, so a missing header
// cannot equal an unset key. Nothing presented is kept.
func Equal(presented string, k Key) bool {
	d := sha256.Sum256([]byte(presented))
	same := subtle.ConstantTimeCompare(d[:], k.digest[:]) == 1
	return same && k.set && presented != ""
}
