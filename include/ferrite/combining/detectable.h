// ferrite/combining/detectable.h — the OpLog moved to ferrite/detectable.h
// (it is not combining-specific); these names remain for existing code.
#pragma once

#include "ferrite/detectable.h"

namespace ferrite::combining {
using ferrite::OpLog;
using ferrite::OpLogRoot;
using ferrite::OpRecord;
}  // namespace ferrite::combining
