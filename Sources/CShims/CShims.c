#include "CShims.h"

int sfu_opus_encoder_set_int(OpusEncoder *encoder, int request, int value) {
    return opus_encoder_ctl(encoder, request, value);
}

int sfu_opus_decoder_reset(OpusDecoder *decoder) {
    return opus_decoder_ctl(decoder, OPUS_RESET_STATE);
}

vpx_codec_err_t sfu_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}

vpx_codec_err_t sfu_vpx_vp8_encoder_default_config(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}

vpx_codec_err_t sfu_vpx_vp8_decoder_init(vpx_codec_ctx_t *ctx) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), NULL, 0);
}

vpx_codec_err_t sfu_vpx_control_int(vpx_codec_ctx_t *ctx, int control, int value) {
    return vpx_codec_control_(ctx, control, value);
}
