// Proof-of-work solver for the waiting room page (app.js), run as a Web
// Worker so the page stays responsive. Given {challenge, bits} it tries the
// decimal counters 0, 1, 2, … as solutions until SHA-256(challenge +
// solution) starts with `bits` zero bits (at most 28, so the first word
// decides), posting {tried} now and then and {solution, tried} at the end.
// A plain SHA-256 in integers: crypto.subtle is asynchronous per call and
// far slower for millions of tiny messages.
'use strict';

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const H0 = new Uint32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);
const W = new Uint32Array(64);
const H = new Uint32Array(8);

// block hashes the 64 bytes of msg at off into H.
function block(msg, off) {
  for (let i = 0; i < 16; i++) {
    const j = off + i * 4;
    W[i] = (msg[j] << 24) | (msg[j + 1] << 16) | (msg[j + 2] << 8) | msg[j + 3];
  }
  for (let i = 16; i < 64; i++) {
    const a = W[i - 15], b = W[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
}

// firstWord returns the first 32 bits of SHA-256 of the n bytes of buf
// (buf has room for the padding).
function firstWord(buf, n) {
  const blocks = (n + 9 + 63) >> 6;
  buf.fill(0, n, blocks * 64);
  buf[n] = 0x80;
  const bitsLen = n * 8;
  const end = blocks * 64;
  buf[end - 4] = bitsLen >>> 24;
  buf[end - 3] = bitsLen >>> 16;
  buf[end - 2] = bitsLen >>> 8;
  buf[end - 1] = bitsLen;
  H.set(H0);
  for (let off = 0; off < end; off += 64) block(buf, off);
  return H[0];
}

self.onmessage = (e) => {
  const { challenge, bits } = e.data;
  const prefix = new TextEncoder().encode(challenge);
  const buf = new Uint8Array(prefix.length + 20 + 72);
  buf.set(prefix);
  const shift = 32 - bits;
  for (let i = 0; ; i++) {
    const digits = String(i);
    let n = prefix.length;
    for (let k = 0; k < digits.length; k++) buf[n++] = digits.charCodeAt(k);
    if ((firstWord(buf, n) >>> shift) === 0) {
      self.postMessage({ solution: digits, tried: i + 1 });
      return;
    }
    if ((i & 0xffff) === 0xffff) self.postMessage({ tried: i + 1 });
  }
};
