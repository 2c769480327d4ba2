#include "io/request_merger.h"
#include <gtest/gtest.h>
TEST(RequestMerger, Placeholder) {}
