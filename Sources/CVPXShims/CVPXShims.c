#include "CVPXShims.h"

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

int sfu_vpx_next_frame(vpx_codec_ctx_t *ctx, vpx_codec_iter_t *iter, const void **buf, size_t *size, int *keyframe) {
    const vpx_codec_cx_pkt_t *pkt;
    while ((pkt = vpx_codec_get_cx_data(ctx, iter)) != NULL) {
        if (pkt->kind == VPX_CODEC_CX_FRAME_PKT) {
            *buf = pkt->data.frame.buf;
            *size = pkt->data.frame.sz;
            *keyframe = (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
            return 1;
        }
    }
    return 0;
}

int sfu_vpx_frame_corrupted(vpx_codec_ctx_t *ctx) {
    int corrupted = 0;
    if (vpx_codec_control_(ctx, VP8D_GET_FRAME_CORRUPTED, &corrupted) != VPX_CODEC_OK) return -1;
    return corrupted;
}
