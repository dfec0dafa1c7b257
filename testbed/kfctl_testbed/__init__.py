"""kfctl's test bed as a package: what the tests run beside kfctl on 127.0.0.1 (see testbed/README.md).

Test code only: kfctl never imports it, and it is not part of kfctl's distribution.
"""
