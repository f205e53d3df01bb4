// libopus calls Swift cannot make directly: the variadic `*_ctl` functions. Links only libopus.
#ifndef SFU_COPUS_SHIMS_H
#define SFU_COPUS_SHIMS_H

#include <opus/opus.h>

/// opus_encoder_ctl(enc, request, value) for the integer setters (OPUS_SET_*_REQUEST).
int sfu_opus_encoder_set_int(OpusEncoder *encoder, int request, int value);
/// opus_decoder_ctl(dec, OPUS_RESET_STATE).
int sfu_opus_decoder_reset(OpusDecoder *decoder);

#endif
