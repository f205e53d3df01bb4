#include "COpenSSLShims.h"

#include <openssl/err.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sfu_capture { void *owner; sfu_datagram_sink sink; };

static int capture_write(BIO *b, const char *data, int length) {
    struct sfu_capture *c = BIO_get_data(b);
    if (c && c->sink) c->sink(c->owner, (const unsigned char *)data, length);
    return length;
}

static long capture_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)b; (void)num; (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_WPENDING: case BIO_CTRL_PENDING: return 0;
    case BIO_CTRL_DGRAM_QUERY_MTU: case BIO_CTRL_DGRAM_GET_MTU: return 1200;
    case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD: return 28;
    default: return 0;
    }
}

static int capture_create(BIO *b) { BIO_set_init(b, 1); return 1; }

static int capture_destroy(BIO *b) {
    free(BIO_get_data(b));
    BIO_set_data(b, NULL);
    return 1;
}

static BIO_METHOD *capture_method;
static pthread_once_t capture_once = PTHREAD_ONCE_INIT;

static void capture_method_init(void) {
    capture_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sfu datagram capture");
    BIO_meth_set_write(capture_method, capture_write);
    BIO_meth_set_ctrl(capture_method, capture_ctrl);
    BIO_meth_set_create(capture_method, capture_create);
    BIO_meth_set_destroy(capture_method, capture_destroy);
}

BIO *sfu_capture_bio_new(void *owner, sfu_datagram_sink sink) {
    pthread_once(&capture_once, capture_method_init);
    BIO *b = BIO_new(capture_method);
    if (!b) return NULL;
    struct sfu_capture *c = malloc(sizeof *c);
    if (!c) { BIO_free(b); return NULL; }
    c->owner = owner;
    c->sink = sink;
    BIO_set_data(b, c);
    return b;
}

BIO *sfu_feed_bio_new(void) {
    BIO *b = BIO_new(BIO_s_mem());
    if (b) BIO_set_mem_eof_return(b, -1);
    return b;
}

int sfu_generate_p256_certificate(EVP_PKEY **key, X509 **cert, const char *common_name, int days) {
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    if (!pkey) return 0;
    X509 *x = X509_new();
    unsigned char serial[8];
    if (!x || RAND_bytes(serial, sizeof serial) != 1) { EVP_PKEY_free(pkey); X509_free(x); return 0; }
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)((((uint64_t)serial[0] << 24) | (serial[1] << 16) | (serial[2] << 8) | serial[3]) & 0x7FFFFFFF));
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -86400);
    X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)common_name, -1, -1, 0);
    X509_set_issuer_name(x, name);
    if (!X509_sign(x, pkey, EVP_sha256())) { EVP_PKEY_free(pkey); X509_free(x); return 0; }
    *key = pkey;
    *cert = x;
    return 1;
}

int sfu_certificate_sha256(X509 *cert, unsigned char *out) {
    unsigned int n = 0;
    return X509_digest(cert, EVP_sha256(), out, &n) == 1 && n == 32;
}

static int accept_peer_certificate(int preverify, X509_STORE_CTX *ctx) {
    (void)preverify; (void)ctx;
    return 1;  /* self-signed by design: the fingerprint in SDP is what authenticates it */
}

SSL_CTX *sfu_dtls_context_new(int server, EVP_PKEY *key, X509 *cert, const char *srtp_profiles) {
    SSL_CTX *ctx = SSL_CTX_new(server ? DTLS_server_method() : DTLS_client_method());
    if (!ctx) return NULL;
    SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
    if (SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1
        || SSL_CTX_set_tlsext_use_srtp(ctx, srtp_profiles) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_peer_certificate);
    SSL_CTX_set_read_ahead(ctx, 1);
    return ctx;
}

static unsigned int dtls_timer(SSL *ssl, unsigned int previous_us) {
    unsigned int initial = (unsigned int)(uintptr_t)SSL_get_app_data(ssl);
    if (previous_us == 0) return initial ? initial : 1000000;
    unsigned long next = (unsigned long)previous_us * 2;
    return next > 60000000UL ? 60000000U : (unsigned int)next;
}

void sfu_dtls_configure(SSL *ssl, long mtu, unsigned int initial_timeout_us) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    SSL_set_mtu(ssl, mtu);
    SSL_set_app_data(ssl, (void *)(uintptr_t)initial_timeout_us);
    DTLS_set_timer_cb(ssl, dtls_timer);
}

long sfu_dtls_timeout_us(SSL *ssl) {
    struct timeval tv;
    if (!DTLSv1_get_timeout(ssl, &tv)) return -1;
    return (long)tv.tv_sec * 1000000L + tv.tv_usec;
}

int sfu_dtls_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }

int sfu_dtls_srtp_profile(SSL *ssl) {
    SRTP_PROTECTION_PROFILE *p = SSL_get_selected_srtp_profile(ssl);
    return p ? (int)p->id : 0;
}

#include <openssl/pem.h>

int sfu_load_pem(const char *key_pem, int key_len, const char *cert_pem, int cert_len, EVP_PKEY **key, X509 **cert) {
    BIO *kb = BIO_new_mem_buf(key_pem, key_len), *cb = BIO_new_mem_buf(cert_pem, cert_len);
    EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    X509 *c = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    BIO_free(kb);
    BIO_free(cb);
    if (!k || !c) { EVP_PKEY_free(k); X509_free(c); ERR_clear_error(); return 0; }
    *key = k;
    *cert = c;
    return 1;
}

static int bio_to_buffer(BIO *b, char *out, int capacity) {
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    if (n < 0 || n > capacity) return -1;
    memcpy(out, data, (size_t)n);
    return (int)n;
}

int sfu_key_pem(EVP_PKEY *key, char *out, int capacity) {
    BIO *b = BIO_new(BIO_s_mem());
    int n = (b && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)) ? bio_to_buffer(b, out, capacity) : -1;
    BIO_free(b);
    return n;
}

int sfu_cert_pem(X509 *cert, char *out, int capacity) {
    BIO *b = BIO_new(BIO_s_mem());
    int n = (b && PEM_write_bio_X509(b, cert)) ? bio_to_buffer(b, out, capacity) : -1;
    BIO_free(b);
    return n;
}

int sfu_key_matches_certificate(EVP_PKEY *key, X509 *cert) {
    EVP_PKEY *pub = X509_get0_pubkey(cert);
    return pub && EVP_PKEY_eq(key, pub) == 1;
}
