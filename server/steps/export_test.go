package steps

// LogKey is logKey, for tests that read a captcha's answer.
var LogKey = logKey
