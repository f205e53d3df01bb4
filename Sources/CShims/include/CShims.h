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
