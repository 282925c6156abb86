package steps

import (
	"bytes"
	"context"
	"slices"

	"github.com/dchest/captcha"

	"github.com/rushline/rushline/server/queue"
)

// Captcha image size, as the ticketing sites show it.
const (
	CaptchaWidth  = 240
	CaptchaHeight = 80
)

// NewCaptcha draws a captcha of CaptchaDigits random digits; it returns the
// PNG and the answer.
func NewCaptcha() (png []byte, answer string, err error) {
	digits := captcha.RandomDigits(CaptchaDigits)
	var buf bytes.Buffer
	if _, err := captcha.NewImage("", digits, CaptchaWidth, CaptchaHeight).WriteTo(&buf); err != nil {
		return nil, "", err
	}
	b := make([]byte, len(digits))
	for i, d := range digits {
		b[i] = '0' + d
	}
	return buf.Bytes(), string(b), nil
}

// Captcha gives token's attempt a new captcha image and forgets the one
// before: each image takes one answer.
func (s *Service) Captcha(ctx context.Context, eventID, token string) ([]byte, error) {
	a, err := s.active(ctx, eventID, token)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(a.flow, Captcha) {
		return nil, queue.Errorf(queue.CodeStepOutOfOrder, "event %q has no captcha step", eventID)
	}
	png, answer, err := NewCaptcha()
	if err != nil {
		return nil, err
	}
	key := LogKey(eventID, a.en.Seq)
	pipe := s.rdb.TxPipeline()
	pipe.HSet(ctx, key, "cap", answer)
	pipe.PExpire(ctx, key, s.keep)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, queue.Unavailable(err)
	}
	return png, nil
}
