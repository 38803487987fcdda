#include "C4SNet.h"

void *copyall(void *hnd, c4snet_data_t *uc, c4snet_data_t *ch, c4snet_data_t *us, c4snet_data_t *sh, c4snet_data_t *ui, c4snet_data_t *in, c4snet_data_t *ul, c4snet_data_t *lo, c4snet_data_t *fl, c4snet_data_t *db, c4snet_data_t *ld, c4snet_data_t *sc)
{
    /* deep copies go out, the received references are released */
    c4snet_data_t *ouc = C4SNetDeepCopy(uc); C4SNetFree(uc);
    c4snet_data_t *och = C4SNetDeepCopy(ch); C4SNetFree(ch);
    c4snet_data_t *ous = C4SNetDeepCopy(us); C4SNetFree(us);
    c4snet_data_t *osh = C4SNetDeepCopy(sh); C4SNetFree(sh);
    c4snet_data_t *oui = C4SNetDeepCopy(ui); C4SNetFree(ui);
    c4snet_data_t *oin = C4SNetDeepCopy(in); C4SNetFree(in);
    c4snet_data_t *oul = C4SNetDeepCopy(ul); C4SNetFree(ul);
    c4snet_data_t *olo = C4SNetDeepCopy(lo); C4SNetFree(lo);
    c4snet_data_t *ofl = C4SNetDeepCopy(fl); C4SNetFree(fl);
    c4snet_data_t *odb = C4SNetDeepCopy(db); C4SNetFree(db);
    c4snet_data_t *old = C4SNetDeepCopy(ld); C4SNetFree(ld);
    c4snet_data_t *osc = C4SNetDeepCopy(sc); C4SNetFree(sc);
    C4SNetOut(hnd, 1, ouc, och, ous, osh, oui, oin, oul, olo, ofl, odb, old, osc);
    return hnd;
}
