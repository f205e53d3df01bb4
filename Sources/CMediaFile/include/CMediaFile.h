#ifndef CMEDIAFILE_H
#define CMEDIAFILE_H
#include <stddef.h>
#include <stdint.h>

/// One media file written through FFmpeg's libavformat: a container with one stream. The Swift side sees only
/// this opaque handle; the library's headers stay in the C file (one place wraps the library).
typedef struct sfu_media_file sfu_media_file;

enum sfu_media_codec { SFU_MEDIA_OPUS = 1, SFU_MEDIA_VP8 = 2, SFU_MEDIA_VP9 = 3, SFU_MEDIA_H264 = 4 };

/// Opens `path` in container `format` ("ogg", "webm", "matroska") with one stream of `codec`, timestamps in
/// 1/`clock_rate` units. `extradata` (OpusHead, H.264 SPS/PPS in Annex B) may be NULL. Returns NULL and sets
/// `*error` (a negative errno-like libavformat code) on failure. A video's size, when 0, is read from
/// `first_frame` (its first key frame) by libavcodec's parser.
sfu_media_file *sfu_media_file_open(const char *path, const char *format, int codec, int clock_rate,
                                    const uint8_t *extradata, size_t extradata_size, int width, int height,
                                    const uint8_t *first_frame, size_t first_frame_size, int *error);
/// Writes one frame with its presentation time and duration in the stream's clock units. Returns 0 or a
/// negative code (a disk error is reported here, the muxer flushing each packet).
int sfu_media_file_write(sfu_media_file *file, const uint8_t *data, size_t size, int64_t pts, int64_t duration,
                         int keyframe);
/// Writes the trailer (durations, cues) and closes the file; frees the handle whatever happens. Returns 0 or
/// the first error.
int sfu_media_file_close(sfu_media_file *file);
/// Bytes written so far (the container's overhead included).
int64_t sfu_media_file_bytes(const sfu_media_file *file);
/// A human-readable form of a libavformat error code.
void sfu_media_error_string(int error, char *buffer, size_t size);
#endif
