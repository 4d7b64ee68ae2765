/* SPDX-License-Identifier: ISC */
/*
 * install_consumer.c - a program built against an *installed* libmbsc with
 * nothing but `pkg-config --cflags --libs mbsc`, as gateway software would
 * be.  CI builds and runs it after `make install` and from the Debian
 * packages (.ci/consumer-build) to check that the installed headers stand
 * on their own, that the shared library exports the API, that no libsodium
 * call is needed (mbsc_init() is done by the library), and, with
 * WITH_MODBUS, that a program calling libmodbus itself links too (mbsc.pc
 * lists libmodbus in Requires).  Not part of make check (it needs an
 * installed copy).
 */
#include <mbsc.h>
#ifdef WITH_MODBUS
#include <mbsc/modbus.h>
#endif
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
    int rc;

    if (c == NULL || cfg == NULL) {
        fprintf(stderr, "install_consumer: setup failed\n");
        return 1;
    }
    if (strcmp(mbsc_version(), MBSC_VERSION_STRING) != 0) {
        fprintf(stderr, "install_consumer: headers %s, library %s\n", MBSC_VERSION_STRING,
                mbsc_version());
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
    /* Key generation needs libsodium's random generator: the library must
     * have initialised it, since this program never calls sodium_init(). */
    rc = mbsc_keypair_generate(&kp);
    if (rc == MBSC_OK)
        rc = mbsc_config_set_keypair(cfg, &kp);
    mbsc_keypair_wipe(&kp);
    mbsc_config_free(cfg);
    if (rc != MBSC_OK) {
        fprintf(stderr, "install_consumer: key pair: %s\n", mbsc_strerror(rc));
        return 1;
    }
#ifdef WITH_MODBUS
    if (mbsc_modbus_check_adu((const uint8_t *)"\0\1\0\0\0\2\1\3", 8) != MBSC_OK) {
        fprintf(stderr, "install_consumer: mbsc_modbus_check_adu failed\n");
        return 1;
    }
    {
        /* libmodbus called directly, linked only through mbsc.pc's Requires. */
        modbus_mapping_t *map = modbus_mapping_new(0, 0, 4, 0);

        if (map == NULL || map->nb_registers != 4) {
            fprintf(stderr, "install_consumer: modbus_mapping_new failed\n");
            return 1;
        }
        modbus_mapping_free(map);
        printf("install_consumer: libmodbus %s\n", LIBMODBUS_VERSION_STRING);
    }
#endif
    if (memcmp(buf, zero, sizeof buf) != 0) {
        fprintf(stderr, "install_consumer: keystream did not cancel out\n");
        return 1;
    }
    printf("install_consumer: the installed libmbsc %s works\n", mbsc_version());
    return 0;
}
