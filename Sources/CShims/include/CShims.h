// Thin C wrappers for the parts of libopus and libvpx that Swift cannot call directly:
// variadic `*_ctl` functions and initialisers that are macros over versioned ABI calls.
#ifndef SFU_CSHIMS_H
#define SFU_CSHIMS_H

#include <opus/opus.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

/// opus_encoder_ctl(enc, request, value) for the integer setters (OPUS_SET_*_REQUEST).
int sfu_opus_encoder_set_int(OpusEncoder *encoder, int request, int value);
/// opus_decoder_ctl(dec, OPUS_RESET_STATE).
int sfu_opus_decoder_reset(OpusDecoder *decoder);

/// vpx_codec_enc_init with the VP8 encoder interface and the header's ABI version.
vpx_codec_err_t sfu_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg);
/// vpx_codec_enc_config_default for the VP8 encoder interface.
vpx_codec_err_t sfu_vpx_vp8_encoder_default_config(vpx_codec_enc_cfg_t *cfg);
/// vpx_codec_dec_init with the VP8 decoder interface and the header's ABI version.
vpx_codec_err_t sfu_vpx_vp8_decoder_init(vpx_codec_ctx_t *ctx);
/// vpx_codec_control for integer controls (VP8E_SET_CPUUSED and the like).
vpx_codec_err_t sfu_vpx_control_int(vpx_codec_ctx_t *ctx, int control, int value);

#endif

#ifndef SFU_CSHIMS_VPX_EXTRA
#define SFU_CSHIMS_VPX_EXTRA
/// Next compressed frame from the encoder: returns 1 and fills buf/size/keyframe, or 0 when there is none.
int sfu_vpx_next_frame(vpx_codec_ctx_t *ctx, vpx_codec_iter_t *iter, const void **buf, size_t *size, int *keyframe);
/// VP8D_GET_FRAME_CORRUPTED after a decode: 1 when the last frame was corrupt, 0 if clean, -1 on error.
int sfu_vpx_frame_corrupted(vpx_codec_ctx_t *ctx);
#endif

#ifndef SFU_CSHIMS_DTLS
#define SFU_CSHIMS_DTLS
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
#endif

#ifndef SFU_CSHIMS_PEM
#define SFU_CSHIMS_PEM
/// Reads a private key and certificate from PEM text; 1 on success.
int sfu_load_pem(const char *key_pem, int key_len, const char *cert_pem, int cert_len, EVP_PKEY **key, X509 **cert);
/// Writes the key (PKCS#8) and certificate as PEM into caller buffers; returns the bytes written or -1.
int sfu_key_pem(EVP_PKEY *key, char *out, int capacity);
int sfu_cert_pem(X509 *cert, char *out, int capacity);
/// 1 when the key is the certificate's key.
int sfu_key_matches_certificate(EVP_PKEY *key, X509 *cert);
#endif
