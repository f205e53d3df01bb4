#include "COpusShims.h"

int sfu_opus_encoder_set_int(OpusEncoder *encoder, int request, int value) {
    return opus_encoder_ctl(encoder, request, value);
}

int sfu_opus_decoder_reset(OpusDecoder *decoder) {
    return opus_decoder_ctl(decoder, OPUS_RESET_STATE);
}
