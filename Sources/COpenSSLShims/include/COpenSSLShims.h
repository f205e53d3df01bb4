// OpenSSL calls Swift cannot make directly (macros, callbacks, BIO methods) for DTLS-SRTP and the node's
// certificate. Links only libssl and libcrypto.
#ifndef SFU_COPENSSL_SHIMS_H
#define SFU_COPENSSL_SHIMS_H

#include <openssl/ssl.h>
#include <openssl/x509.h>

/// Called for every datagram OpenSSL writes through a capture BIO.
typedef void (*sfu_datagram_sink)(void *owner, const unsigned char *data, int length);
/// A write-only BIO that hands each write (one DTLS datagram) to `sink` instead of a socket.
BIO *sfu_capture_bio_new(void *owner, sfu_datagram_sink sink);
/// A memory BIO that reports "retry" rather than EOF when empty, for feeding received datagrams.
BIO *sfu_feed_bio_new(void);

/// A self-signed ECDSA P-256 certificate with a random serial, valid from a day ago for `days` days.
int sfu_generate_p256_certificate(EVP_PKEY **key, X509 **cert, const char *common_name, int days);
/// SHA-256 digest of the DER certificate (32 bytes into out).
int sfu_certificate_sha256(X509 *cert, unsigned char *out);

/// A DTLS context: DTLS 1.2 at least, our certificate, peer certificate required but accepted here (the
/// caller checks its fingerprint against SDP), the given SRTP profiles ("A:B:C", in preference order).
SSL_CTX *sfu_dtls_context_new(int server, EVP_PKEY *key, X509 *cert, const char *srtp_profiles);
/// Applies a link MTU and the first retransmission timeout (microseconds; doubles up to 60 s, RFC 6347).
void sfu_dtls_configure(SSL *ssl, long mtu, unsigned int initial_timeout_us);
/// Microseconds until OpenSSL's retransmission timer fires, or -1 when none runs.
long sfu_dtls_timeout_us(SSL *ssl);
/// DTLSv1_handle_timeout: retransmits the last flight when its timer has expired.
int sfu_dtls_handle_timeout(SSL *ssl);
/// The negotiated DTLS-SRTP protection profile id, or 0.
int sfu_dtls_srtp_profile(SSL *ssl);

/// Reads a private key and certificate from PEM text; 1 on success.
int sfu_load_pem(const char *key_pem, int key_len, const char *cert_pem, int cert_len, EVP_PKEY **key, X509 **cert);
/// Writes the key (PKCS#8) and certificate as PEM into caller buffers; returns the bytes written or -1.
int sfu_key_pem(EVP_PKEY *key, char *out, int capacity);
int sfu_cert_pem(X509 *cert, char *out, int capacity);
/// 1 when the key is the certificate's key.
int sfu_key_matches_certificate(EVP_PKEY *key, X509 *cert);

#endif
