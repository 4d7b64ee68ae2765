# SPDX-License-Identifier: ISC
# tls_certs.sh - certificates for tests/tls.test, made by the openssl
# command line at test time (sourced; tls_make_certs DIR).  Nothing here is
# made by the gateway: the role extension is written by openssl from its
# configuration syntax (ASN1:UTF8String), as docs/tls.md tells users to.
#
# In DIR (every key mode 0600):
#   ca           the CA of the masters and of the devices (EC P-256)
#   other-ca     a CA nobody trusts, and stranger (a client it signed)
#   gateway      the gateway's certificate (EC): localhost, 127.0.0.1
#   gateway-rsa  the same with an RSA key (for the ECDHE-RSA suites)
#   device       a device's certificate: localhost, 127.0.0.1
#   plc7         a device's certificate for the name plc7.example only
#   operator, viewer, admin   clients whose role is that word
#   norole       a client without the role extension
#   malformed    the role as an IA5String (not a UTF8String)
#   longrole     a role of 65 bytes
#   tworoles     the role extension twice (operator, then admin)
#   expired      role operator, valid in 2020 only

tls_role_oid=1.3.6.1.4.1.50316.802.1

# tls_key DIR NAME [rsa]: a new key, mode 0600.
tls_key() {
    if [ "${3:-}" = rsa ]; then
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1/$2.key" 2>/dev/null
    else
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1/$2.key" 2>/dev/null
    fi || return 1
    chmod 600 "$1/$2.key"
}

# tls_issue DIR NAME CA SECTION [rsa]: NAME's key and certificate, signed by CA
# with the extensions of SECTION (tls_certs.cnf).
tls_issue() {
    tls_key "$1" "$2" "${5:-}" || return 1
    openssl req -new -key "$1/$2.key" -subj "/O=mbsc tests/CN=$2" -out "$1/$2.csr" 2>/dev/null &&
        openssl x509 -req -in "$1/$2.csr" -CA "$1/$3.pem" -CAkey "$1/$3.key" -set_serial \
            "0x$(openssl rand -hex 8)" -days 2 -extfile "$1/tls_certs.cnf" -extensions "$4" \
            -out "$1/$2.pem" 2>/dev/null
}

# tls_twice DIR: tworoles.pem, a certificate with the role extension twice.
# openssl's configuration keeps one extension per OID, so the certificate is
# made with the role and a second extension whose OID differs in the last
# arc only (...802.2, the same length), that OID is changed to the role's in
# the to-be-signed part, and the CA signs the result again.
tls_twice() {
    d=$1
    openssl x509 -in "$d/tworoles-draft.pem" -outform DER -out "$d/tworoles-draft.der" || return 1
    # Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }:
    # the first element's offset and length from asn1parse.
    line=$(openssl asn1parse -inform DER -in "$d/tworoles-draft.der" | sed -n 2p)
    off=$(echo "$line" | sed 's/^ *\([0-9]*\):.*/\1/')
    hl=$(echo "$line" | sed 's/.*hl= *\([0-9]*\).*/\1/')
    len=$(echo "$line" | sed 's/.*l= *\([0-9]*\) cons.*/\1/')
    [ -n "$off" ] && [ -n "$hl" ] && [ -n "$len" ] || return 1
    dd if="$d/tworoles-draft.der" of="$d/tbs.der" bs=1 skip="$off" count=$((hl + len)) 2>/dev/null
    # 06 0b 2b 06 01 04 01 83 89 0c 86 22 02 is ...50316.802.2; make it .1.
    od -An -v -tx1 "$d/tbs.der" | tr -d ' \n' |
        sed 's/060b2b0601040183890c862202/060b2b0601040183890c862201/' >"$d/tbs.hex"
    grep -q '060b2b0601040183890c862201.*060b2b0601040183890c862201' "$d/tbs.hex" || return 1
    sed 's/../\\x&/g' "$d/tbs.hex" | xargs -0 printf '%b' >"$d/tbs.der"
    openssl dgst -sha256 -sign "$d/ca.key" -out "$d/tbs.sig" "$d/tbs.der" || return 1
    # The outer SEQUENCE by hand: tbs, ecdsa-with-SHA256 (the CA's key is EC),
    # the signature as a BIT STRING without unused bits.
    alg=300a06082a8648ce3d040302
    sig=00$(od -An -v -tx1 "$d/tbs.sig" | tr -d ' \n')
    body=$(cat "$d/tbs.hex")$alg$(tls_der_head 03 $((${#sig} / 2)))$sig
    printf '%s%s' "$(tls_der_head 30 $((${#body} / 2)))" "$body" | sed 's/../\\x&/g' |
        xargs -0 printf '%b' >"$d/tworoles.der"
    openssl x509 -inform DER -in "$d/tworoles.der" -out "$d/tworoles.pem" 2>/dev/null
}

# tls_der_head TAG LEN: a DER tag and length in hex.
tls_der_head() {
    if [ "$2" -lt 128 ]; then
        printf '%s%02x' "$1" "$2"
    elif [ "$2" -lt 256 ]; then
        printf '%s81%02x' "$1" "$2"
    else
        printf '%s82%04x' "$1" "$2"
    fi
}

tls_make_certs() {
    d=$1
    long=$(printf 'r%.0s' $(seq 1 65))
    cat >"$d/tls_certs.cnf" <<EOF
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
[plc7]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:plc7.example
[norole]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
[operator]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
$tls_role_oid = ASN1:UTF8String:operator
[viewer]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
$tls_role_oid = ASN1:UTF8String:viewer
[admin]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
$tls_role_oid = ASN1:UTF8String:admin
[malformed]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
$tls_role_oid = ASN1:IA5STRING:operator
[longrole]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
$tls_role_oid = ASN1:UTF8String:$long
[tworoles]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
$tls_role_oid = ASN1:UTF8String:operator
1.3.6.1.4.1.50316.802.2 = ASN1:UTF8String:admin
[ca_conf]
database = $d/cadb/index.txt
new_certs_dir = $d/cadb
serial = $d/cadb/serial
default_md = sha256
policy = ca_policy
unique_subject = no
[ca_policy]
organizationName = optional
commonName = supplied
EOF
    for ca in ca other-ca; do
        tls_key "$d" $ca || return 1
        openssl req -new -x509 -key "$d/$ca.key" -subj "/O=mbsc tests/CN=$ca" -days 2 \
            -config "$d/tls_certs.cnf" -extensions ca -out "$d/$ca.pem" 2>/dev/null || return 1
    done
    tls_issue "$d" gateway ca server &&
        tls_issue "$d" gateway-rsa ca server rsa &&
        tls_issue "$d" device ca server &&
        tls_issue "$d" plc7 ca plc7 &&
        tls_issue "$d" stranger other-ca operator &&
        for c in operator viewer admin norole malformed longrole; do
            tls_issue "$d" $c ca $c || return 1
        done &&
        tls_issue "$d" tworoles ca tworoles || return 1
    mv "$d/tworoles.pem" "$d/tworoles-draft.pem" && tls_twice "$d" || return 1
    # expired: openssl ca takes explicit dates (openssl x509 -days cannot go back).
    mkdir -p "$d/cadb" && : >"$d/cadb/index.txt" && echo 01 >"$d/cadb/serial" &&
        tls_key "$d" expired &&
        openssl req -new -key "$d/expired.key" -subj "/O=mbsc tests/CN=expired" \
            -out "$d/expired.csr" 2>/dev/null &&
        openssl ca -batch -config "$d/tls_certs.cnf" -name ca_conf -cert "$d/ca.pem" \
            -keyfile "$d/ca.key" -in "$d/expired.csr" -extfile "$d/tls_certs.cnf" \
            -extensions operator -startdate 20200101000000Z -enddate 20201231000000Z -notext \
            -out "$d/expired.pem" 2>/dev/null
}
