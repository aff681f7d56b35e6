#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <errno.h>
#include <string.h>
int main(){
  unsigned long bitmask=0;
  long r1=syscall(SYS_arch_prctl, 0x1022 /*ARCH_GET_XCOMP_SUPP*/, &bitmask);
  printf("GET_XCOMP_SUPP rc=%ld errno=%s mask=0x%lx (bit18 xtiledata=%d)\n", r1, r1?strerror(errno):"-", bitmask, (int)((bitmask>>18)&1));
  long r=syscall(SYS_arch_prctl, 0x1023 /*ARCH_REQ_XCOMP_PERM*/, 18);
  printf("REQ_XCOMP_PERM(18) rc=%ld errno=%s\n", r, r?strerror(errno):"-");
  return 0;
}
