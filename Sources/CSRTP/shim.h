#include <srtp2/srtp.h>
