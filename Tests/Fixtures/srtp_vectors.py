#!/usr/bin/env python3
"""Independent SRTP known-answer vectors for Tests/SFUTests/SRTPTests.swift.

Computed from the RFC text with Python's `cryptography` (no libsrtp): the RFC 3711 section 4.3 key
derivation (checked here against RFC 3711 appendix B.3), AES-CM + HMAC-SHA1 (RFC 3711 sections 4.1.1, 4.2)
and AEAD AES-GCM (RFC 7714 sections 8 and 9). Run: python3 srtp_vectors.py
"""
import hmac, hashlib
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

def aes_cm(key, iv16, n):
    enc = Cipher(algorithms.AES(key), modes.CTR(iv16)).encryptor()
    return enc.update(b"\0" * n)

def kdf(master_key, master_salt, label, n):
    # RFC 3711 4.3.1 with key_derivation_rate 0: x = (label || r=0) XOR master_salt, 112 bits, then AES-CM.
    salt = master_salt + b"\0" * (14 - len(master_salt))  # RFC 7714 section 11: 96-bit salt padded to 112
    key_id = bytes([0] * 7) + bytes([label]) + bytes(6)
    x = bytes(a ^ b for a, b in zip(key_id, salt))
    return aes_cm(master_key, x + b"\0\0", n)

# RFC 3711 appendix B.3
mk = bytes.fromhex("E1F97A0D3E018BE0D64FA32C06DE4139")
ms = bytes.fromhex("0EC675AD498AFEEBB6960B3AABE6")
assert kdf(mk, ms, 0, 16).hex().upper() == "C61E7A93744F39EE10734AFE3FF7A087"
assert kdf(mk, ms, 2, 14).hex().upper() == "30CBBC08863D8C85D49DB34A9AE1"
assert kdf(mk, ms, 1, 20).hex().upper() == "CEBE321F6FF7716B6FD4AB49AF256A156D38BAA4"

def srtp_cm(master_key, master_salt, packet, tag_len, roc=0):
    ek, ak, sk = kdf(master_key, master_salt, 0, 16), kdf(master_key, master_salt, 1, 20), kdf(master_key, master_salt, 2, 14)
    hdr, payload = packet[:12], packet[12:]
    ssrc, seq = int.from_bytes(packet[8:12], "big"), int.from_bytes(packet[2:4], "big")
    index = (roc << 16) | seq
    iv = int.from_bytes(sk, "big") << 16 ^ ssrc << 64 ^ index << 16
    ct = bytes(a ^ b for a, b in zip(payload, aes_cm(ek, iv.to_bytes(16, "big"), len(payload))))
    tag = hmac.new(ak, hdr + ct + roc.to_bytes(4, "big"), hashlib.sha1).digest()[:tag_len]
    return hdr + ct + tag

def srtcp_cm(master_key, master_salt, packet, index):
    ek, ak, sk = kdf(master_key, master_salt, 3, 16), kdf(master_key, master_salt, 4, 20), kdf(master_key, master_salt, 5, 14)
    ssrc = int.from_bytes(packet[4:8], "big")
    iv = int.from_bytes(sk, "big") << 16 ^ ssrc << 64 ^ index << 16
    ct = bytes(a ^ b for a, b in zip(packet[8:], aes_cm(ek, iv.to_bytes(16, "big"), len(packet) - 8)))
    e_index = (0x80000000 | index).to_bytes(4, "big")
    body = packet[:8] + ct + e_index
    return body + hmac.new(ak, body, hashlib.sha1).digest()[:10]

def srtp_gcm(master_key, master_salt, packet, roc=0):
    n = len(master_key)
    ek, sk = kdf(master_key, master_salt, 0, n), kdf(master_key, master_salt, 2, 12)
    hdr, payload = packet[:12], packet[12:]
    iv = bytes(2) + packet[8:12] + roc.to_bytes(4, "big") + packet[2:4]
    iv = bytes(a ^ b for a, b in zip(iv, sk))
    return hdr + AESGCM(ek).encrypt(iv, payload, hdr)

rtp = bytes.fromhex("800f1234decafbadcafebabe") + b"\xab" * 16
rtcp = bytes.fromhex("81c8000ccafebabe") + bytes(range(44))
gk = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
gs = bytes.fromhex("a0a1a2a3a4a5a6a7a8a9aaab")
gk256 = bytes(range(32))
print("aesCM128HmacSHA1_80", srtp_cm(mk, ms, rtp, 10).hex())
print("aesCM128HmacSHA1_32", srtp_cm(mk, ms, rtp, 4).hex())
print("srtcp aesCM128HmacSHA1_80 index1", srtcp_cm(mk, ms, rtcp, 1).hex())
print("aeadAES128GCM", srtp_gcm(gk, gs, rtp).hex())
print("aeadAES256GCM", srtp_gcm(gk256, gs, rtp).hex())
