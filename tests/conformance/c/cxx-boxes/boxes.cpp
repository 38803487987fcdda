// C++ boxes: templates and std::vector inside the box, C4SNetOut out.
// The box functions need no `extern "C"`: `snet build` declares them so.
#include <algorithm>
#include <numeric>
#include <vector>

#include "C4SNet.h"

namespace {

template <typename T>
std::vector<T> elements(c4snet_data_t *field)
{
    const T *p = static_cast<const T *>(C4SNetGetData(field));
    return std::vector<T>(p, p + C4SNetArraySize(field));
}

template <typename T>
T total(const std::vector<T> &v)
{
    return std::accumulate(v.begin(), v.end(), T());
}

}  // namespace

void *sortsum(void *hnd, c4snet_data_t *xs)
{
    std::vector<int> v = elements<int>(xs);
    C4SNetFree(xs);
    int sum = total(v);
    if (sum < 0) {
        C4SNetOut(hnd, 2, sum);
        return hnd;
    }
    std::sort(v.begin(), v.end());
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_int, v.size(), v.data()), sum);
    return hnd;
}
