// libvpx calls Swift cannot make directly: initialisers that are macros over versioned ABI calls, variadic
// controls and the encoder's packet iterator. Links only libvpx (tests, demo, load generator; never the node).
#ifndef SFU_CVPX_SHIMS_H
#define SFU_CVPX_SHIMS_H

#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

/// vpx_codec_enc_init with the VP8 encoder interface and the header's ABI version.
vpx_codec_err_t sfu_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg);
/// vpx_codec_enc_config_default for the VP8 encoder interface.
vpx_codec_err_t sfu_vpx_vp8_encoder_default_config(vpx_codec_enc_cfg_t *cfg);
/// vpx_codec_dec_init with the VP8 decoder interface and the header's ABI version.
vpx_codec_err_t sfu_vpx_vp8_decoder_init(vpx_codec_ctx_t *ctx);
/// vpx_codec_control for integer controls (VP8E_SET_CPUUSED and the like).
vpx_codec_err_t sfu_vpx_control_int(vpx_codec_ctx_t *ctx, int control, int value);

/// Next compressed frame from the encoder: returns 1 and fills buf/size/keyframe, or 0 when there is none.
int sfu_vpx_next_frame(vpx_codec_ctx_t *ctx, vpx_codec_iter_t *iter, const void **buf, size_t *size, int *keyframe);
/// VP8D_GET_FRAME_CORRUPTED after a decode: 1 when the last frame was corrupt, 0 if clean, -1 on error.
int sfu_vpx_frame_corrupted(vpx_codec_ctx_t *ctx);

#endif
