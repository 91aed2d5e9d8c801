"""Security: TLS contexts and certificate principals, SASL (PLAIN and SCRAM) with its
JAAS settings, SCRAM credentials, ACLs and the authorizer, and the session that
says who a connection is.
May use: settings/ (and protocol/)."""
