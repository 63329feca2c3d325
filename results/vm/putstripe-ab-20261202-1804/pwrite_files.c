/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define PIECE (256u<<10)
static size_t total; static int nth, nfiles; static int fds[16];
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void *run(void *a){ long i=(long)a; char *b=aligned_alloc(4096,PIECE); memset(b,i+1,PIECE);
  size_t per=total/nth; size_t off0=i*per; int fd=fds[nfiles==1?0:i];
  size_t base = nfiles==1? off0 : 0;
  for(size_t p=0;p<per;p+=PIECE) if(pwrite(fd,b,PIECE,base+p)!=PIECE) {perror("pwrite");exit(1);}
  free(b); return NULL;}
int main(int c,char**v){ total=(size_t)atol(v[1])<<20; nth=atoi(v[2]); nfiles=atoi(v[3]);
  for(int i=0;i<nfiles;i++){char n[64];snprintf(n,64,"/dev/shm/pwtest.%d",i);unlink(n);fds[i]=open(n,O_RDWR|O_CREAT,0600);}
  pthread_t t[16]; double t0=now(); for(long i=0;i<nth;i++)pthread_create(&t[i],0,run,(void*)i);
  for(int i=0;i<nth;i++)pthread_join(t[i],0); double dt=now()-t0;
  printf("threads=%d files=%d MiB=%zu GB/s=%.2f\n",nth,nfiles,total>>20,total/dt/1e9);
  for(int i=0;i<nfiles;i++){char n[64];snprintf(n,64,"/dev/shm/pwtest.%d",i);unlink(n);}
}
