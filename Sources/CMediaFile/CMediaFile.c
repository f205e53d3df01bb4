#include "CMediaFile.h"
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
#include <string.h>
#include <unistd.h>

struct sfu_media_file {
    AVFormatContext *ctx;
    AVPacket *packet;
    AVRational clock;
    int failed;
};

static enum AVCodecID codec_id(int codec) {
    switch (codec) {
    case SFU_MEDIA_OPUS: return AV_CODEC_ID_OPUS;
    case SFU_MEDIA_VP8: return AV_CODEC_ID_VP8;
    case SFU_MEDIA_VP9: return AV_CODEC_ID_VP9;
    case SFU_MEDIA_H264: return AV_CODEC_ID_H264;
    default: return AV_CODEC_ID_NONE;
    }
}

/// The picture size libavcodec's parser reads from a key frame's headers (H.264: its SPS; VP9: the
/// uncompressed header), for a container that wants it in the track header.
static void probe_size(enum AVCodecID id, const uint8_t *frame, size_t size, int *width, int *height) {
    AVCodecParserContext *pc = av_parser_init(id);
    AVCodecContext *cc = avcodec_alloc_context3(NULL);
    uint8_t *buf = av_mallocz(size + AV_INPUT_BUFFER_PADDING_SIZE);
    if (pc && cc && buf) {
        memcpy(buf, frame, size);
        uint8_t *out = NULL;
        int out_size = 0;
        av_parser_parse2(pc, cc, &out, &out_size, buf, (int)size, AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
        av_parser_parse2(pc, cc, &out, &out_size, NULL, 0, AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
        if (pc->width > 0 && pc->height > 0) { *width = pc->width; *height = pc->height; }
        else if (cc->width > 0 && cc->height > 0) { *width = cc->width; *height = cc->height; }
    }
    av_free(buf);
    avcodec_free_context(&cc);
    if (pc) av_parser_close(pc);
}

sfu_media_file *sfu_media_file_open(const char *path, const char *format, int codec, int clock_rate,
                                    const uint8_t *extradata, size_t extradata_size, int width, int height,
                                    const uint8_t *first_frame, size_t first_frame_size, int *error) {
    *error = 0;
    enum AVCodecID id = codec_id(codec);
    if (codec != SFU_MEDIA_OPUS && (width <= 0 || height <= 0) && first_frame && first_frame_size > 0)
        probe_size(id, first_frame, first_frame_size, &width, &height);
    if (id == AV_CODEC_ID_NONE || clock_rate <= 0) { *error = AVERROR(EINVAL); return NULL; }
    AVFormatContext *ctx = NULL;
    int r = avformat_alloc_output_context2(&ctx, NULL, format, path);
    if (r < 0 || !ctx) { *error = r < 0 ? r : AVERROR(ENOMEM); return NULL; }
    AVStream *st = avformat_new_stream(ctx, NULL);
    if (!st) { avformat_free_context(ctx); *error = AVERROR(ENOMEM); return NULL; }
    st->time_base = (AVRational){1, clock_rate};
    AVCodecParameters *par = st->codecpar;
    par->codec_id = id;
    if (codec == SFU_MEDIA_OPUS) {
        par->codec_type = AVMEDIA_TYPE_AUDIO;
        par->sample_rate = 48000;
        av_channel_layout_default(&par->ch_layout, 2);
    } else {
        par->codec_type = AVMEDIA_TYPE_VIDEO;
        par->width = width;
        par->height = height;
    }
    if (extradata && extradata_size > 0) {
        par->extradata = av_mallocz(extradata_size + AV_INPUT_BUFFER_PADDING_SIZE);
        if (!par->extradata) { avformat_free_context(ctx); *error = AVERROR(ENOMEM); return NULL; }
        memcpy(par->extradata, extradata, extradata_size);
        par->extradata_size = (int)extradata_size;
    }
    // Each packet reaches the disk as it is written: a full disk is seen at once, and a node that dies leaves
    // a file readable up to its last frame.
    ctx->flags |= AVFMT_FLAG_FLUSH_PACKETS;
    r = avio_open(&ctx->pb, path, AVIO_FLAG_WRITE);
    if (r < 0) { avformat_free_context(ctx); *error = r; return NULL; }
    r = avformat_write_header(ctx, NULL);
    if (r < 0) { avio_closep(&ctx->pb); avformat_free_context(ctx); unlink(path); *error = r; return NULL; }
    sfu_media_file *f = calloc(1, sizeof(*f));
    AVPacket *pkt = av_packet_alloc();
    if (!f || !pkt) {
        free(f); av_packet_free(&pkt);
        avio_closep(&ctx->pb); avformat_free_context(ctx);
        *error = AVERROR(ENOMEM); return NULL;
    }
    f->ctx = ctx;
    f->packet = pkt;
    f->clock = (AVRational){1, clock_rate};
    return f;
}

int sfu_media_file_write(sfu_media_file *f, const uint8_t *data, size_t size, int64_t pts, int64_t duration,
                         int keyframe) {
    if (f->failed) return f->failed;
    AVPacket *pkt = f->packet;
    av_packet_unref(pkt);
    int r = av_new_packet(pkt, (int)size);
    if (r < 0) return r;
    memcpy(pkt->data, data, size);
    pkt->stream_index = 0;
    pkt->pts = pts;
    pkt->dts = pts;
    pkt->duration = duration;
    if (keyframe) pkt->flags |= AV_PKT_FLAG_KEY;
    av_packet_rescale_ts(pkt, f->clock, f->ctx->streams[0]->time_base);
    r = av_write_frame(f->ctx, pkt);
    av_packet_unref(pkt);
    if (r >= 0 && f->ctx->pb && f->ctx->pb->error < 0) r = f->ctx->pb->error;
    if (r < 0) f->failed = r;
    return r < 0 ? r : 0;
}

int sfu_media_file_close(sfu_media_file *f) {
    int r = f->failed;
    if (!r) r = av_write_trailer(f->ctx);
    else av_write_trailer(f->ctx);  // what it can still write; the file stays readable up to its last frame
    if (f->ctx->pb && f->ctx->pb->error < 0 && r >= 0) r = f->ctx->pb->error;
    int c = avio_closep(&f->ctx->pb);
    if (r >= 0 && c < 0) r = c;
    avformat_free_context(f->ctx);
    av_packet_free(&f->packet);
    free(f);
    return r < 0 ? r : 0;
}

int64_t sfu_media_file_bytes(const sfu_media_file *f) {
    return f->ctx->pb ? avio_tell(f->ctx->pb) : 0;
}

void sfu_media_error_string(int error, char *buffer, size_t size) {
    av_strerror(error, buffer, size);
}
