#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# make_test_pki.sh DIR: the certificates the TLS tests use, made with the
# openssl command in DIR (which must exist and be empty). EC P-256 keys;
# every certificate issued by `openssl ca`, so that dates can be set and
# revocations listed:
#   ca.pem                  the CA both sides trust
#   other-ca.pem            a CA nobody's certificate comes from
#   server.pem, server.key  the server's, key encrypted with "server-pass"
#   client.pem, client.key  a client's, key encrypted with "client-pass"
#   expired.pem/.key        valid 2020-2021            (key: "client-pass")
#   future.pem/.key         valid from 2090            (key: "client-pass")
#   revoked.pem/.key        revoked in crl.pem         (key: "client-pass")
#   stranger.pem/.key       issued by other-ca         (key: "client-pass")
#   crl.pem                 the CA's CRL, revoked.pem in it
set -euo pipefail
dir=${1:?usage: make_test_pki.sh DIR}
cd "$dir"
export OPENSSL_CONF=/dev/null

# ca NAME: a self-signed CA, its key unencrypted, and its `openssl ca` state.
ca() {
	local name=$1
	mkdir -p "$name.db/new"
	: >"$name.db/index.txt"
	echo 1000 >"$name.db/serial"
	echo 1000 >"$name.db/crlnumber"
	cat >"$name.cnf" <<CNF
[ ca ]
default_ca = this_ca
[ this_ca ]
database = $dir/$name.db/index.txt
new_certs_dir = $dir/$name.db/new
serial = $dir/$name.db/serial
crlnumber = $dir/$name.db/crlnumber
certificate = $dir/$name.pem
private_key = $dir/$name.key
default_md = sha256
default_days = 3650
default_crl_days = 3650
policy = any_name
unique_subject = no
x509_extensions = leaf
[ any_name ]
commonName = supplied
[ leaf ]
basicConstraints = CA:false
keyUsage = digitalSignature
extendedKeyUsage = serverAuth, clientAuth
[ req ]
distinguished_name = dn
[ dn ]
[ ca_ext ]
basicConstraints = critical, CA:true
keyUsage = keyCertSign, cRLSign
subjectKeyIdentifier = hash
CNF
	openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
	openssl req -config "$name.cnf" -new -x509 -days 3650 -key "$name.key" \
		-subj "/CN=droce test $name" -extensions ca_ext -out "$name.pem"
}

# leaf CA NAME PASS [openssl ca date options...]: NAME.pem and NAME.key.
leaf() {
	local issuer=$1 name=$2 pass=$3
	shift 3
	openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null |
		openssl pkcs8 -topk8 -v2 aes-256-cbc -passout "pass:$pass" -out "$name.key"
	openssl req -config "$issuer.cnf" -new -key "$name.key" -passin "pass:$pass" \
		-subj "/CN=droce test $name" -out "$name.csr"
	openssl ca -config "$issuer.cnf" -batch -notext "$@" -in "$name.csr" -out "$name.pem" \
		2>/dev/null
	rm -f "$name.csr"
}

ca ca
ca other-ca
leaf ca server server-pass
leaf ca client client-pass
leaf ca expired client-pass -startdate 20200101000000Z -enddate 20210101000000Z
leaf ca future client-pass -startdate 20900101000000Z -enddate 20910101000000Z
leaf ca revoked client-pass
leaf other-ca stranger client-pass
openssl ca -config ca.cnf -revoke revoked.pem 2>/dev/null
openssl ca -config ca.cnf -gencrl -out crl.pem 2>/dev/null
