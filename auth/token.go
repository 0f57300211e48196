package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// TokenPrefix starts every API token's secret, so that a leaked token is recognizable (secret
// scanners, logs) and the server tells it from a JWT without parsing it.
const TokenPrefix = "sst_"

// tokenSecretBytes is the randomness of a token's secret: 256 bits.
const tokenSecretBytes = 32

// NewTokenSecret draws a new API token secret: TokenPrefix and 32 random bytes in unpadded
// base64url (47 characters in all), and returns it with its hash (HashTokenSecret), the only
// part the store keeps.
func NewTokenSecret() (secret string, hash []byte) {
	b := make([]byte, tokenSecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashTokenSecret(secret)
}

// HashTokenSecret is the SHA-256 of secret, as the store keeps it. A fast hash is enough: the
// secret is 256 random bits, not a password that could be guessed.
func HashTokenSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// IsTokenSecret reports whether s looks like an API token's secret (starts with TokenPrefix).
func IsTokenSecret(s string) bool { return strings.HasPrefix(s, TokenPrefix) }
