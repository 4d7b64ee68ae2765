/*
 * install_consumer.c - a program built against an *installed* libmbsc with
 * `pkg-config --cflags --libs mbsc`, as gateway software would be.  CI
 * builds and runs it after `make install` to check that the installed
 * headers stand on their own and that the shared library exports the API.
 * Not part of make check (it needs an installed copy).
 */
#include <mbsc.h>
#ifdef WITH_MODBUS
#include <mbsc/modbus.h>
#endif
#include <sodium.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    static const uint8_t key[16] = {1, 2, 3}, iv[8] = {4, 5, 6};
    uint8_t buf[64] = {0}, zero[64] = {0};
    const mbsc_cipher *c = mbsc_cipher_by_name("rabbit");
    mbsc_config *cfg = mbsc_config_new(MBSC_ROLE_MASTER);
    mbsc_keypair kp;
    mbsc_stream st;

    if (sodium_init() < 0 || c == NULL || cfg == NULL) {
        fprintf(stderr, "install_consumer: setup failed\n");
        return 1;
    }
    if (mbsc_stream_init(&st, c, key, sizeof key, iv, sizeof iv) != MBSC_OK) {
        fprintf(stderr, "install_consumer: mbsc_stream_init failed\n");
        return 1;
    }
    mbsc_stream_xor(&st, buf, buf, sizeof buf);
    if (memcmp(buf, zero, sizeof buf) == 0) {
        fprintf(stderr, "install_consumer: no keystream\n");
        return 1;
    }
    /* The same key and IV again: XOR with the same keystream restores zeros. */
    if (mbsc_stream_init(&st, c, key, sizeof key, iv, sizeof iv) != MBSC_OK)
        return 1;
    mbsc_stream_xor(&st, buf, buf, sizeof buf);
    mbsc_stream_wipe(&st);
    if (mbsc_keypair_generate(&kp) != MBSC_OK || mbsc_config_set_keypair(cfg, &kp) != MBSC_OK) {
        fprintf(stderr, "install_consumer: key pair failed\n");
        return 1;
    }
    mbsc_keypair_wipe(&kp);
    mbsc_config_free(cfg);
#ifdef WITH_MODBUS
    if (mbsc_modbus_check_adu((const uint8_t *)"\0\1\0\0\0\2\1\3", 8) != MBSC_OK) {
        fprintf(stderr, "install_consumer: mbsc_modbus_check_adu failed\n");
        return 1;
    }
#endif
    if (memcmp(buf, zero, sizeof buf) != 0) {
        fprintf(stderr, "install_consumer: keystream did not cancel out\n");
        return 1;
    }
    printf("install_consumer: the installed libmbsc works\n");
    return 0;
}
